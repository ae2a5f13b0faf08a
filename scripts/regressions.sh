#!/usr/bin/env bash
# Hunts a real regression from PostgreSQL's history blind, and checks that
# pgbisect names the commit the history names.
#
#   scripts/regressions.sh [options] NAME [-- PGBISECT-ARGS...]
#   scripts/regressions.sh --list
#
# NAME is a case of bisect-profiles/regressions/cases.tsv. The script takes
# a window of WINDOW commits (default 32, at least 30) of master's
# first-parent line that holds the case's culprit, the culprit's place in it
# drawn from the seed, and runs
#   pgbisect --repo PG --good <first> --bad <last> --profile <case> --json ...
# with the why-runs (add `-- --no-why` to skip them). Then it prints PASS
# when the hunt named the culprit, FAIL otherwise, and the functions whose
# share of the server's CPU samples rose most between the culprit's parent
# and the culprit.
# With --control the window ends before the culprit (by a distance drawn
# from the seed), where no regression of that workload is known: PASS is a
# hunt that ends no-regression.
#
# Options:
#   --pg-repo DIR   a clone of PostgreSQL with its full history (or
#                   $PGBISECT_PG_REPO); never written to
#   --ref REF       the branch whose first-parent line is cut (default:
#                   master, else origin/master)
#   --seed N        draws the culprit's place in the window (default 1)
#   --window N      commits in the window (default 32)
#   --control       a window before the culprit; expects no-regression
#   --work DIR      results and pgbisect's work dir (default
#                   /var/tmp/pgbisect-regressions); made if missing, and
#                   refused unless every level of it is a real folder of
#                   this user or root that others cannot write
#   --dry-run       print the window and the command, run nothing
# Arguments after `--` go to pgbisect as they are (e.g. --run-as, --deadline).
# PGBISECT names the pgbisect binary (default: this checkout's release build).
# Exit status: 0 PASS, 1 FAIL, 2 bad usage.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
catalogue="$here/bisect-profiles/regressions"
. "$here/scripts/private-dir.sh"

die() { echo "regressions: $*" >&2; exit 2; }

pg_repo=${PGBISECT_PG_REPO:-}
ref=""
seed=1
window=32
control=0
work=/var/tmp/pgbisect-regressions
dry_run=0
name=""
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --pg-repo) pg_repo=${2:-}; shift 2 ;;
    --ref) ref=${2:-}; shift 2 ;;
    --seed) seed=${2:-}; shift 2 ;;
    --window) window=${2:-}; shift 2 ;;
    --control) control=1; shift ;;
    --work) work=${2:-}; shift 2 ;;
    --dry-run) dry_run=1; shift ;;
    --list) grep -v '^#' "$catalogue/cases.tsv" | cut -f1; exit 0 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -*) die "unknown option $1 (see --help)" ;;
    *) [ -z "$name" ] || die "one case at a time (got $name and $1)"; name=$1; shift ;;
  esac
done

# Checked first: as root, a folder someone else made there first would
# have the outputs below written through the links they planted in it.
private_dir "$work" || die "cannot write into $work: pass --work DIR, a folder of your own"

[ -n "$name" ] || die "name a case: $(grep -v '^#' "$catalogue/cases.tsv" | cut -f1 | paste -sd' ')"
[[ $seed =~ ^[0-9]+$ ]] || die "--seed takes a whole number, not '$seed'"
[[ $window =~ ^[0-9]+$ ]] && [ "$window" -ge 30 ] || die "--window takes a number of at least 30, not '$window'"
[ -n "$pg_repo" ] || die "no PostgreSQL clone: pass --pg-repo DIR or set PGBISECT_PG_REPO \
(a clone with master's full history, e.g. git clone https://git.postgresql.org/git/postgresql.git)"
git -C "$pg_repo" rev-parse --git-dir > /dev/null 2>&1 || die "$pg_repo is not a git repository"

line=$(awk -F'\t' -v n="$name" '$1 == n' "$catalogue/cases.tsv")
[ -n "$line" ] || die "no case named $name in $catalogue/cases.tsv; --list lists them"
IFS=$'\t' read -r _ culprit fix expected notes <<< "$line"
profile="$catalogue/$name/profile.toml"
[ -f "$profile" ] || die "the case $name has no $profile"

if [ -z "$ref" ]; then
  for r in master origin/master; do
    git -C "$pg_repo" rev-parse -q --verify "$r^{commit}" > /dev/null && { ref=$r; break; }
  done
  [ -n "$ref" ] || die "$pg_repo has neither master nor origin/master: pass --ref"
fi
git -C "$pg_repo" cat-file -e "$culprit^{commit}" 2> /dev/null \
  || die "$pg_repo lacks the culprit $culprit: it needs master's full history (not a shallow clone)"

# master's first-parent line, oldest first, and the culprit's place on it.
mapfile -t line_of < <(git -C "$pg_repo" rev-list --first-parent --reverse "$ref")
at=-1
fix_at=-1
for i in "${!line_of[@]}"; do
  case ${line_of[$i]} in
    "$culprit") at=$i ;;
    "$fix") fix_at=$i ;;
  esac
done
[ "$at" -ge 0 ] || die "the culprit $culprit is not on the first-parent line of $ref"

# A seeded draw, the same for the same seed on every machine and bash
# (not $RANDOM: bash reseeds it in every subshell).
draw() { # N -> 0..N-1 in $drawn
  local x=$(( (seed + 1) * 2654435761 % 4294967296 ))
  x=$(( x ^ (x >> 13) ))
  x=$(( x * 1274126177 % 4294967296 ))
  x=$(( x ^ (x >> 16) ))
  drawn=$(( x % $1 ))
}
if [ "$control" = 1 ]; then
  # Ends 1..window commits before the culprit: the culprit is never inside.
  draw "$window"
  end=$(( at - 1 - drawn ))
  start=$(( end - window + 1 ))
  want=no-regression
else
  # The culprit at place 1..window-1 (place 0 is the good end).
  draw $((window - 1))
  place=$(( 1 + drawn ))
  start=$(( at - place ))
  end=$(( start + window - 1 ))
  want=$culprit
fi
[ "$start" -ge 0 ] && [ "$end" -lt "${#line_of[@]}" ] \
  || die "a window of $window commits does not fit around $culprit on $ref"
if [ "$fix_at" -ge 0 ] && [ "$fix_at" -le "$end" ] && [ "$fix_at" -ge "$start" ]; then
  die "the window holds the fix $fix too: use a smaller --window"
fi
good=${line_of[$start]}
bad=${line_of[$end]}

kind=case; [ "$control" = 1 ] && kind=control
run="$name-$kind-seed$seed"
echo "regressions: $run: window of $window first-parent commits of $ref"
echo "  good $good $(git -C "$pg_repo" log -1 --format='%ad %s' --date=short "$good")"
echo "  bad  $bad $(git -C "$pg_repo" log -1 --format='%ad %s' --date=short "$bad")"
if [ "$control" = 1 ]; then
  echo "  control: ends $(( at - end )) commits before the culprit ${culprit:0:12}"
else
  echo "  culprit ${culprit:0:12} is commit $place of 0..$((window - 1)) (hidden from pgbisect)"
fi
case $expected in
  drop) [ -z "$notes" ] || echo "  note: $notes" ;;
  *) echo "  note: expected to FAIL today ($expected): $notes" ;;
esac

pgbisect=${PGBISECT:-$here/target/release/pgbisect}
cmd=("$pgbisect" --repo "$pg_repo" --good "$good" --bad "$bad" --profile "$profile"
  --work-dir "$work/work-$name" --json "$work/$run.json" "${extra[@]}")
echo "  \$ ${cmd[*]}"
[ "$dry_run" = 1 ] && exit 0
if [ -z "${PGBISECT:-}" ]; then
  (cd "$here" && cargo build --release -q)
fi

rm -f "$work/$run.json"
set +e
"${cmd[@]}" > "$work/$run.txt" 2> "$work/$run.log"
code=$?
set -e
echo "  pgbisect exit code $code; report $work/$run.txt, log $work/$run.log"
[ -f "$work/$run.json" ] || { echo "FAIL $run: no result (see the log)"; exit 1; }

python3 - "$work/$run.json" "$want" "$run" <<'PY'
import json, sys
path, want, run = sys.argv[1:4]
r = json.load(open(path))
outcome = r.get("outcome")
named = [c["commit"] for c in r.get("culprits", [])]
for c in r.get("culprits", []):
    ch = c.get("change", {})
    print(f"  named {c['commit'][:12]} {c.get('subject', '')}: {ch.get('pct', 0):+.1f}%")
t = r.get("totals", {})
for why in r.get("why", []):
    cpu = why.get("cpu") or {}
    compared = cpu.get("compared") if isinstance(cpu, dict) else None
    if not compared:
        print(f"  why {why['commit'][:12]}: no CPU profile ({cpu.get('unavailable', 'none') if isinstance(cpu, dict) else cpu})")
        continue
    risers = ", ".join(f"{f['name']} {100 * (f['self_after'] - f['self_before']):+.1f}pp"
                       for f in compared.get("risers", [])[:3])
    print(f"  why {why['commit'][:12]}: CPU self share rose most: {risers or 'none'}")
    grown = ", ".join(f"{f['name']} {100 * (f['total_after'] - f['total_before']):+.1f}pp"
                      for f in compared.get("grown", [])[:3])
    print(f"  why {why['commit'][:12]}: with callees rose most: {grown or 'none'}")
    changed = compared.get("changed")
    if changed is not None:
        top = ", ".join(f"{f['name']} {100 * (f['total_after'] - f['total_before']):+.1f}pp"
                        for f in changed.get("sampled", [])[:3])
        other = ", ".join(changed.get("other_files", [])[:3])
        print(f"  why {why['commit'][:12]}: functions the culprit changed, with callees: "
              f"{top or 'none sampled'}" + (f"; outside functions: {other}" if other else ""))
print(f"  outcome {outcome}; wall {t.get('wall_seconds', 0):.0f} s; builds {t.get('builds', '?')}; "
      f"runs {t.get('runs', '?')}")
if want == "no-regression":
    ok = outcome == "no-regression"
    detail = f"wanted no-regression, got {outcome}"
else:
    ok = want in named
    others = [n[:12] for n in named if n != want]
    detail = f"wanted {want[:12]}, named {', '.join(n[:12] for n in named) or 'none'}"
    if ok and others:
        detail += f" (also {', '.join(others)})"
print(("PASS" if ok else "FAIL") + f" {run}: {detail}")
sys.exit(0 if ok else 1)
PY
