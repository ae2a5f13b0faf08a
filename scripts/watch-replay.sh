#!/usr/bin/env bash
# The nightly watcher replayed over made histories of real PostgreSQL,
# unattended: NIGHTS commits of Debian's PostgreSQL 15 source landed a day
# apart, one of them (the middle one) slowing down ExecutorStart, replayed
# a night a day with `pgbisect watch --replay FIRST..LAST --every 1`, mail
# going to a local SMTP sink and the site written with --html; then the
# same over a control history of NIGHTS commits with no slowdown.
#
#   scripts/watch-replay.sh [WORK] [NIGHTS]
#
# WORK defaults to /var/tmp/pgbisect-watch-replay, NIGHTS to 60 (fewer,
# down to 12, for a quick try). The slowdown lands on the middle night (8
# nights before the last in a short replay). Checks, on the slow history:
# one change confirmed slower, between the injected commit and its parent; its hunt
# names the injected commit; exactly one finding mailed (digests aside),
# naming it; the site shows the confirmed change and links the hunt's
# report. On the control history: no change confirmed, no finding mailed
# (digests only). Prints what each replay cost. Exits non-zero when a
# check fails.
#
# The environment:
#   PGBISECT_PG_SOURCE     the PostgreSQL source (default: the clone's
#                          .pgbisect-test-cache/postgresql-15, else that of
#                          the main checkout when this is a git worktree)
#   PGBISECT_SPIN          the injected slowdown's spin loop (default here
#                          100000, a clear drop at a few clients)
#   PGBISECT_REPLAY_CLIENTS the pgbench client counts (default 2)
#   PGBISECT_REPLAY_PROFILE the profile (default smoke: select-only,
#                          prepared, 5-second runs, scale 10)
#   PGBISECT_REPLAY_MEASURE tps (default), instructions (a count series,
#                          counted under cachegrind) or both; with
#                          instructions, PGBISECT_SPIN=150 is a step of
#                          about 2%
#   PGBISECT_BIN           a pgbisect binary to use instead of building one
#   VARIANTS               "slow control" (default), or either alone
#
# Every replay starts afresh (its results database, mail, site, hunts and
# counted runs' fitted lengths are removed first, and the checkout, which
# another NIGHTS made of another history); the installs in its work dir
# are kept, so a second run of the script builds nothing it built before.
set -euo pipefail
export PGBISECT_SPIN=${PGBISECT_SPIN:-100000}
here="$(cd "$(dirname "$0")/.." && pwd)"
work=${1:-/var/tmp/pgbisect-watch-replay}
nights=${2:-60}
clients=${PGBISECT_REPLAY_CLIENTS:-2}
profile=${PGBISECT_REPLAY_PROFILE:-smoke}
measure=${PGBISECT_REPLAY_MEASURE:-tps}
variants=${VARIANTS:-slow control}

case $nights in ''|*[!0-9]*) echo "watch-replay: NIGHTS must be a number" >&2; exit 2 ;; esac
case $measure in tps|instructions|both) ;; *) echo "watch-replay: PGBISECT_REPLAY_MEASURE must be tps, instructions or both" >&2; exit 2 ;; esac
for variant in $variants; do
  case $variant in slow|control) ;; *) echo "watch-replay: unknown variant $variant" >&2; exit 2 ;; esac
done
[ "$nights" -ge 12 ] || { echo "watch-replay: NIGHTS must be at least 12" >&2; exit 2; }
[ "$nights" -ge 60 ] || echo "watch-replay: $nights nights: a quick try (the proof is 60 or more)"

# The PostgreSQL source: given, in this clone, or in the main checkout of
# a git worktree.
if [ -z "${PGBISECT_PG_SOURCE:-}" ]; then
  PGBISECT_PG_SOURCE=$here/.pgbisect-test-cache/postgresql-15
  if [ ! -f "$PGBISECT_PG_SOURCE/configure" ]; then
    common=$(git -C "$here" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
    [ -n "$common" ] && [ -f "$common/../.pgbisect-test-cache/postgresql-15/configure" ] &&
      PGBISECT_PG_SOURCE=$(cd "$common/.." && pwd)/.pgbisect-test-cache/postgresql-15
  fi
fi
export PGBISECT_PG_SOURCE
[ -f "$PGBISECT_PG_SOURCE/configure" ] ||
  { echo "watch-replay: no PostgreSQL source in $PGBISECT_PG_SOURCE; run scripts/setup.sh or set PGBISECT_PG_SOURCE" >&2; exit 1; }

# An SMTP sink: aiosmtpd (scripts/setup.sh installs it), else the smtpd
# module of Pythons before 3.12.
if python3 -c 'import aiosmtpd' 2>/dev/null; then sink=aiosmtpd
elif python3 -W ignore -c 'import smtpd' 2>/dev/null; then sink=smtpd
else echo "watch-replay: neither Python's aiosmtpd nor smtpd is here; run scripts/setup.sh" >&2; exit 1
fi

if [ -n "${PGBISECT_BIN:-}" ]; then
  pgbisect=$PGBISECT_BIN
else
  (cd "$here" && cargo build --release -q)
  pgbisect=${CARGO_TARGET_DIR:-$here/target}/release/pgbisect
  case $pgbisect in /*) ;; *) pgbisect=$here/$pgbisect ;; esac
fi
[ -x "$pgbisect" ] || { echo "watch-replay: no pgbisect at $pgbisect" >&2; exit 1; }

. "$here/scripts/private-dir.sh"
private_dir "$work" || { echo "watch-replay: cannot write into $work: give a folder of your own" >&2; exit 2; }
day0=1767225600 # 2026-01-01 00:00 UTC, make-history.sh's commit 0
first_day=$(date -u -d "@$day0" +%F)
last_day=$(date -u -d "@$(( day0 + 86400 * (nights - 1) ))" +%F)
# The slowdown lands on the middle night, or 8 nights before the last when
# that is earlier: the change-point test (199 permutations, p <= 0.01)
# raises a clean step from 5 or 6 points after it.
middle=$(( nights / 2 ))
[ "$middle" -le $(( nights - 8 )) ] || middle=$(( nights - 8 ))

failures=0
check() { # WHAT CONDITION...
  local what=$1; shift
  if "$@"; then echo "  ok: $what"; else echo "  FAILED: $what"; failures=$((failures + 1)); fi
}

sink_pid=
stop_sink() {
  if [ -n "$sink_pid" ]; then
    kill "$sink_pid" 2>/dev/null || true
    wait "$sink_pid" 2>/dev/null || true
  fi
  sink_pid=
}
trap stop_sink EXIT

# Starts the SMTP sink on a free port, each message a file in DIR; sets
# sink_pid and port.
start_sink() { # DIR
  local dir=$1
  mkdir -p "$dir"
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  python3 -W ignore - "$sink" "$port" "$dir" > "$dir.log" 2>&1 <<'PY' &
import os, sys, time
kind, port, folder = sys.argv[1], int(sys.argv[2]), sys.argv[3]
count = 0
def keep(data):
    global count
    count += 1
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    path = os.path.join(folder, "%04d.eml" % count)
    with open(path + ".tmp", "wb") as f:
        f.write(data)
    os.rename(path + ".tmp", path)
if kind == "aiosmtpd":
    from aiosmtpd.controller import Controller
    class Handler:
        async def handle_DATA(self, server, session, envelope):
            keep(envelope.original_content or envelope.content)
            return "250 OK"
    Controller(Handler(), hostname="127.0.0.1", port=port).start()
    while True:
        time.sleep(3600)
else:
    import asyncore, smtpd
    class Sink(smtpd.SMTPServer):
        def process_message(self, peer, mailfrom, rcpttos, data, **kwargs):
            keep(data)
    Sink(("127.0.0.1", port), None, decode_data=False)
    asyncore.loop()
PY
  sink_pid=$!
  local tries=0
  until python3 -c 'import socket, sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1)' "$port" 2>/dev/null; do
    tries=$((tries + 1))
    [ "$tries" -lt 100 ] || { echo "watch-replay: the SMTP sink did not start (log $dir.log)" >&2; exit 1; }
    kill -0 "$sink_pid" 2>/dev/null || { echo "watch-replay: the SMTP sink died (log $dir.log)" >&2; exit 1; }
    sleep 0.2
  done
}

# Mails in DIR: "findings N", "digests N", then the finding files.
mails() { # DIR
  python3 - "$1" <<'PY'
import glob, os, sys
findings, digests = [], []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "*.eml"))):
    text = open(path, "rb").read().decode("utf-8", "replace").replace("\r\n ", " ").replace("\r\n", "\n")
    (digests if "\nSubject: pgbisect watch digest: " in "\n" + text else findings).append(path)
print("findings", len(findings))
print("digests", len(digests))
for f in findings:
    print(f)
PY
}

# Whether the mail FILE's subject, unfolded (a long one is folded onto
# more lines), is a finding's naming SHORT.
subject_names() { # FILE SHORT
  python3 - "$1" "$2" <<'PY'
import email, sys
with open(sys.argv[1], "rb") as f:
    subject = " ".join(str(email.message_from_binary_file(f)["Subject"] or "").split())
sys.exit(0 if subject.startswith("pgbisect watch: ") and sys.argv[2] in subject else 1)
PY
}

# Whether the site's table of changes has a row for the change whose later
# commit is SHORT, confirmed (or reported, once mailed).
site_row() { # INDEX SHORT
  python3 - "$1" "$2" <<'PY'
import re, sys
text, short = open(sys.argv[1]).read(), sys.argv[2]
rows = re.findall(r"<tr>.*?</tr>", text, re.S)
sys.exit(0 if any(".. " in r and short in r.split(".. ", 1)[1] and
                  re.search(r'class="(confirmed|reported)"', r) for r in rows) else 1)
PY
}

# One value from the results database: SQL [ARGS...].
sql() { # DB SQL [ARG...]
  python3 - "$@" <<'PY'
import sqlite3, sys
import os
db, query, args = sys.argv[1], sys.argv[2], sys.argv[3:]
try:
    if not os.path.isfile(db):
        raise FileNotFoundError(db)
    row = sqlite3.connect(db).execute(query, args).fetchone()
    print("" if row is None or row[0] is None else row[0])
except Exception as e:
    print(f"no answer from {db}: {e}", file=sys.stderr)
    print("none")
PY
}

# What a replay cost, from the results database and the hunts' JSON.
cost() { # WORK_DIR WALL_SECONDS
  python3 - "$1" "$2" <<'PY'
import glob, json, os, sqlite3, sys
work, wall = sys.argv[1], float(sys.argv[2])
db = sqlite3.connect(os.path.join(work, "watch.sqlite"))
nights, failed = db.execute(
    "SELECT count(*), count(*) FILTER (WHERE status <> 'done') FROM nights").fetchone()
commits = db.execute("SELECT count(DISTINCT commit_id) FROM night_commits").fetchone()[0]
runs, bench, first, last = db.execute(
    "SELECT count(*), coalesce(sum(seconds), 0), min(started), max(started + seconds) FROM runs").fetchone()
changes = db.execute("SELECT status, count(*) FROM changes GROUP BY status ORDER BY status").fetchall()
print(f"  wall {wall:.0f} s for {nights} nights ({wall / max(nights, 1):.0f} s a night), "
      f"{nights - failed} done; {commits} commits measured")
print(f"  nightly runs {runs} ({bench:.0f} s of pgbench, {bench / max(nights, 1):.0f} s a night); "
      f"changes: {', '.join(f'{n} {s}' for s, n in changes) or 'none'}")
# A night's time: from its first run's start to the next night's; the
# median is a quiet night's, the rest went to side-by-side runs and hunts.
starts = [r[0] for r in db.execute("SELECT min(started) FROM runs GROUP BY night ORDER BY night")]
gaps = sorted(b - a for a, b in zip(starts, starts[1:]))
if gaps:
    median = gaps[len(gaps) // 2]
    extra = sum(g - median for g in gaps if g > 2 * median)
    print(f"  a night: median {median:.0f} s from one night's first run to the next's; "
          f"{extra:.0f} s more on the nights that confirmed or hunted")
# Builds: each commit the watcher measured, and those its hunts and
# why-runs made, from the hunts' own totals.
for path in sorted(glob.glob(os.path.join(work, "watch-hunts", "change-*", "report.json"))):
    r = json.load(open(path))
    t = r.get("totals", {})
    print(f"  hunt {os.path.basename(os.path.dirname(path))}: outcome {r.get('outcome')}; "
          f"wall {t.get('wall_seconds', 0):.0f} s; builds {t.get('builds', 0)} "
          f"({t.get('build_seconds', 0):.0f} s); runs {t.get('runs', 0)} "
          f"({t.get('measured_runs', 0)} measured, {t.get('bench_seconds', 0):.0f} s of pgbench)")
PY
}

# Builds made in the work dir since MARKER: the installs it holds (one a
# commit and build settings; the why-runs' own with frame pointers among
# them), and the seconds the build logs give (a log is kept a commit, so
# a commit built twice counts its last build's).
builds_made() { # WORK_DIR MARKER
  local installs seconds
  installs=$(find "$1/installs" -mindepth 1 -maxdepth 1 -type d -newer "$2" 2>/dev/null | wc -l)
  seconds=$(find "$1" -name 'build-*.log' -newer "$2" -print0 2>/dev/null |
    xargs -0 -r cat | sed -n 's/^pgbisect: installed .* in \([0-9.]*\) s$/\1/p' |
    awk '{ s += $1 } END { printf "%.0f", s }')
  echo "$installs installs made (build logs: ${seconds:-0} s)"
}

replay() { # VARIANT
  local variant=$1 vw="$work/$1"
  local repo="$vw/postgres" wd="$vw/work" site="$vw/site" box="$vw/mail"
  echo "== $variant: $nights nights, $first_day..$last_day"
  mkdir -p "$vw"
  if [ "$variant" = slow ]; then
    PGBISECT_HISTORY_STEP=86400 "$here/scripts/make-history.sh" "$repo" "$(( nights - 1 ))" "$middle" 0 | tee "$vw/history.txt"
  else
    PGBISECT_HISTORY_STEP=86400 "$here/scripts/make-history.sh" "$repo" "$(( nights - 1 ))" 0 0 | tee "$vw/history.txt"
  fi
  # A fresh replay: the results, mail, site and hunts go; builds stay.
  rm -rf "$wd/watch.sqlite" "$wd/watch.sqlite-wal" "$wd/watch.sqlite-shm" "$wd/watch-hunts" "$wd/counted-lengths.json" \
    "$wd/checkout" \
    "$wd/digests" "$site" "$box" "$box.log"
  mkdir -p "$wd"
  start_sink "$box"
  touch "$vw/started"
  echo "  $pgbisect watch --repo $repo --branch main --work-dir $wd --profile $profile" \
    "--clients $clients --measure $measure --replay $first_day..$last_day --every 1 --backfill 0" \
    "--mail-to perf@example.org --smtp 127.0.0.1:$port --html $site"
  local t0 t1
  t0=$(date +%s)
  set +e
  "$pgbisect" watch --repo "$repo" --branch main --work-dir "$wd" --profile "$profile" \
    --clients "$clients" --measure "$measure" --replay "$first_day..$last_day" --every 1 --backfill 0 \
    --mail-to perf@example.org --smtp "127.0.0.1:$port" --html "$site" \
    > "$vw/watch.txt" 2> "$vw/watch.log"
  code=$?
  set -e
  t1=$(date +%s)
  sleep 1
  stop_sink
  echo "  exit code $code; output $vw/watch.txt, log $vw/watch.log"
  cost "$wd" "$(( t1 - t0 ))" || echo "  wall $(( t1 - t0 )) s; no results database to read"
  echo "  builds: $(builds_made "$wd" "$vw/started")"

  local db="$wd/watch.sqlite" findings digests
  findings=$(mails "$box" | sed -n 's/^findings //p')
  digests=$(mails "$box" | sed -n 's/^digests //p')
  echo "  mail: $findings finding(s), $digests digest(s) in $box"
  local confirmed
  confirmed=$(sql "$db" "SELECT count(*) FROM changes WHERE status IN ('confirmed', 'reported') AND pct < 0")
  case $variant in
    slow)
      local culprit parent change short
      culprit=$(sed -n 's/^slow: \([0-9a-f]*\) .*/\1/p' "$vw/history.txt")
      check "the history has exactly one injected slowdown" test "$(grep -c '^slow: ' "$vw/history.txt")" = 1
      parent=$(git -C "$repo" rev-parse "$culprit^")
      short=${culprit:0:8}
      check "exit code 0 (a change confirmed)" test "$code" = 0
      check "exactly one change confirmed slower" test "$confirmed" = 1
      check "it lies between ${parent:0:8} and $short" test \
        "$(sql "$db" "SELECT count(*) FROM changes WHERE status IN ('confirmed', 'reported') AND pct < 0 AND before_commit = ? AND after_commit = ?" "$parent" "$culprit")" = 1
      change=$(sql "$db" "SELECT id FROM changes WHERE status IN ('confirmed', 'reported') AND pct < 0 ORDER BY id LIMIT 1")
      check "its hunt names $short exactly (database)" test \
        "$(sql "$db" "SELECT culprit FROM changes WHERE id = ?" "${change:-0}")" = "$culprit"
      check "the output names the culprit $short" grep -q "culprit $culprit" "$vw/watch.txt"
      check "exactly one finding mailed (beside $digests digest(s))" test "$findings" = 1
      local finding
      finding=$(mails "$box" | sed -n '3p')
      check "the finding names the culprit" grep -q "Culprit: $culprit" "${finding:-/dev/null}"
      check "the finding's subject names $short" subject_names "${finding:-/dev/null}" "$short"
      check "the site's index shows the change ..$short confirmed" site_row "$site/index.html" "$short"
      check "the site's index links the hunt's report" grep -q "hunts/change-${change:-0}" "$site/index.html"
      check "the hunt's report in the site names $short" grep -q "$short" "$site/hunts/change-${change:-0}.txt"
      ;;
    control)
      check "the history has no injected slowdown" test "$(grep -c '^slow: ' "$vw/history.txt")" = 0
      check "exit code 1 (no change confirmed)" test "$code" = 1
      check "no change confirmed (slower or faster)" test \
        "$(sql "$db" "SELECT count(*) FROM changes WHERE status IN ('confirmed', 'reported')")" = 0
      check "no finding mailed" test "$findings" = 0
      if [ "$nights" -gt 7 ]; then
        check "digests mailed" test "$digests" -ge 1
      fi
      check "the site's index shows no confirmed change" bash -c \
        "test -f '$site/index.html' && ! grep -Eq 'class=\"(confirmed|reported)\"' '$site/index.html'"
      ;;
  esac
}

# One block, read whole before it runs: an edit of this file while a
# replay runs does not change what the running script does next.
{
  for variant in $variants; do
    case $variant in
      slow|control) replay "$variant" ;;
      *) echo "watch-replay: unknown variant $variant" >&2; exit 2 ;;
    esac
  done
  echo "watch-replay: $failures failed checks; outputs in $work"
  [ "$failures" = 0 ]
  exit
}
