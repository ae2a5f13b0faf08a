#!/usr/bin/env bash
# End-to-end hunts on real PostgreSQL, unattended: a history of COMMITS
# commits of Debian's PostgreSQL 15 source with two injected slowdowns at
# known places, hunted with the smoke profiles (select-only and read-write),
# and the same history without them, which must say no-regression.
# Checks the culprits in the JSON and the email report, that the CPU
# profile of each culprit's why-runs names the function it slowed among
# its top three risers (when perf can record), and prints what
# each hunt cost.
#
#   scripts/e2e.sh [WORK] [COMMITS] [FIRST_SLOW] [SECOND_SLOW] [VARIANTS]
#
# WORK defaults to /var/tmp/pgbisect-e2e; COMMITS 40, slowdowns at 12 and
# 29; VARIANTS is any of "select-only read-write no-regression" (default
# all three). Each injected slowdown is a spin loop of PGBISECT_SPIN
# iterations (default here 40000, about a tenth of a 1-client select-only
# transaction on a 2-core machine). Exits non-zero when a check fails.
set -euo pipefail
export PGBISECT_SPIN=${PGBISECT_SPIN:-40000}
here="$(cd "$(dirname "$0")/.." && pwd)"
work=${1:-/var/tmp/pgbisect-e2e}
commits=${2:-40}
first=${3:-12}
second=${4:-29}
variants=${5:-select-only read-write no-regression}
pgbisect="$here/target/release/pgbisect"

. "$here/scripts/private-dir.sh"
private_dir "$work" || { echo "e2e: cannot write into $work: give a folder of your own" >&2; exit 2; }
"$here/scripts/setup.sh"
(cd "$here" && cargo build --release -q)

"$here/scripts/make-history.sh" "$work/postgres" "$commits" "$first" "$second" | tee "$work/history.txt"
mapfile -t expected < <(sed -n 's/^slow: \([0-9a-f]*\) .*/\1/p' "$work/history.txt")
[ "${#expected[@]}" = 2 ] || { echo "e2e: the history has no two injected slowdowns" >&2; exit 1; }

failures=0
check() { # WHAT CONDITION...
  local what=$1; shift
  if "$@"; then echo "  ok: $what"; else echo "  FAILED: $what"; failures=$((failures + 1)); fi
}

# Prints the cost of a hunt from its JSON.
cost() {
  python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["totals"]
wall = t["wall_seconds"]
print(f"  outcome {r['outcome']}; wall {wall:.0f} s; builds {t['builds']} "
      f"({t['build_seconds']:.0f} s); runs {t['runs']} ({t['measured_runs']} measured, "
      f"{t['bench_seconds']:.0f} s of pgbench); pgbisect CPU {t.get('cpu_seconds', 0):.1f} s "
      f"= {100 * t.get('cpu_seconds', 0) / max(wall, 1e-9):.2f}% of wall")
if t.get("processes", 1) > 1:
    print(f"  resumed: {t['processes']} starts of pgbisect add up to the figures above")
if t.get("setups") and t.get("templates"):
    per_run = t["setup_seconds"] / t["setups"]
    per_template = t["template_seconds"] / max(t["templates"], 1)
    print(f"  templates {t['templates']} ({t['template_seconds']:.1f} s); set-up {per_run:.2f} s a run "
          f"= {100 * per_run / max(per_template, 1e-9):.1f}% of making a template")
for c in r["culprits"]:
    ch = c["change"]
    print(f"  culprit {c['commit'][:12]} {c['subject']}: {ch['pct']:+.1f}% "
          f"[{ch['low_pct']:+.1f}%, {ch['high_pct']:+.1f}%], {c['runs_before']}+{c['runs_after']} runs")
PY
}

culprits_in_json() { # JSON -> full SHAs, one per line, sorted
  python3 -c 'import json,sys; print("\n".join(sorted(c["commit"] for c in json.load(open(sys.argv[1]))["culprits"])))' "$1"
}

# Prints the top risers of the CPU profile of a culprit's why-runs; fails
# when the profile was compared and FUNCTION is not among the first three
# (a profile perf could not take is said, not failed).
profile_names() { # JSON SHA FUNCTION
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
sha, function = sys.argv[2], sys.argv[3]
why = next((w for w in r.get("why", []) if w["commit"] == sha), None)
cpu = (why or {}).get("cpu")
if not cpu:
    print(f"  {sha[:12]}: no CPU profile in the why-runs"); sys.exit(1)
if "unavailable" in cpu:
    print(f"  {sha[:12]}: {cpu['unavailable']}"); sys.exit(0)
c = cpu["compared"]
top = [f["name"] for f in c["risers"][:3]]
print(f"  {sha[:12]}: top risers {', '.join(top)} "
      f"({c['samples_before']} + {c['samples_after']} samples at {c['clients']} clients)")
sys.exit(0 if function in top else 1)
PY
}

hunt() { # NAME PROFILE REPO -> exit code in $code
  local name=$1 profile=$2 repo=$3
  echo "== $name: pgbisect --profile $profile on $repo"
  set +e
  "$pgbisect" --repo "$repo" --good good --bad bad --profile "$profile" \
    --work-dir "$work/work-$name" --json "$work/$name.json" > "$work/$name.txt" 2> "$work/$name.log"
  code=$?
  set -e
  echo "  exit code $code; log $work/$name.log"
}

for variant in $variants; do
  case $variant in
    select-only|read-write)
      profile=smoke; [ "$variant" = read-write ] && profile=smoke-read-write
      hunt "$variant" "$profile" "$work/postgres"
      [ -f "$work/$variant.json" ] || { echo "  FAILED: no JSON"; failures=$((failures + 1)); continue; }
      cost "$work/$variant.json"
      want=$(printf '%s\n' "${expected[@]}" | sort)
      check "exit code 0 (culprit found)" test "$code" = 0
      check "both injected commits in the JSON" test "$(culprits_in_json "$work/$variant.json")" = "$want"
      while read -r _ sha function; do
        check "the CPU profile of ${sha:0:12} names $function among its top three risers" \
          profile_names "$work/$variant.json" "$sha" "$function"
      done < <(grep '^slow: ' "$work/history.txt")
      if "$pgbisect" report --help > /dev/null 2>&1; then
        "$pgbisect" report --work-dir "$work/work-$variant" --format email \
          --from "pgbisect <pgbisect@localhost>" --to pgsql-hackers@lists.postgresql.org \
          > "$work/$variant.eml"
        for sha in "${expected[@]}"; do
          check "email names ${sha:0:12}" grep -q "$sha" "$work/$variant.eml"
        done
        check "email has a Subject" grep -q '^Subject: pgbisect' "$work/$variant.eml"
      fi
      ;;
    no-regression)
      "$here/scripts/make-history.sh" "$work/postgres-flat" "$commits" 0 0 > /dev/null
      hunt no-regression smoke "$work/postgres-flat"
      [ -f "$work/no-regression.json" ] && cost "$work/no-regression.json"
      check "exit code 1 (no regression)" test "$code" = 1
      ;;
    *) echo "e2e: unknown variant $variant" >&2; exit 2 ;;
  esac
done

echo "e2e: $failures failed checks; outputs in $work"
[ "$failures" = 0 ]
