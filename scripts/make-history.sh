#!/usr/bin/env bash
# Builds a git repository of real PostgreSQL source with a known history:
# COMMITS commits that each touch a real backend source file (so every step
# really recompiles), two of which inject a modest slowdown in hot code
# (extra work in ExecutorStart and in ExecutorEnd, run by every statement).
#
#   scripts/make-history.sh DEST [COMMITS] [FIRST_SLOW] [SECOND_SLOW]
#
# The source is Debian's postgresql-15 source package (scripts/setup.sh
# unpacks it) or a PostgreSQL tree given as PGBISECT_PG_SOURCE. Prints the
# SHAs of the injected commits. With SECOND_SLOW = 0 no slowdown is
# injected (a no-regression history).
#
# Commit N is dated N * PGBISECT_HISTORY_STEP seconds (default 3600, an
# hour) after 2026-01-01 00:00 UTC; 86400 gives a commit a day, a history
# for `pgbisect watch --replay`.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
dest=${1:?usage: make-history.sh DEST [COMMITS] [FIRST_SLOW] [SECOND_SLOW]}
commits=${2:-40}
first_slow=${3:-12}
second_slow=${4:-29}
spin=${PGBISECT_SPIN:-20000}
step=${PGBISECT_HISTORY_STEP:-3600}
case $step in ''|*[!0-9]*|0) echo "make-history.sh: PGBISECT_HISTORY_STEP must be a positive number of seconds" >&2; exit 2 ;; esac
source=${PGBISECT_PG_SOURCE:-$here/.pgbisect-test-cache/postgresql-15}
[ -f "$source/configure" ] || { echo "make-history.sh: no PostgreSQL source in $source; run scripts/setup.sh" >&2; exit 1; }

. "$here/scripts/private-dir.sh"
# The folder above DEST checked before DEST is emptied: through a link
# there, `rm -rf` would empty another folder.
private_dir "$(dirname "$dest")" || { echo "make-history.sh: cannot write into $(dirname "$dest"): give a folder of your own" >&2; exit 2; }
rm -rf "$dest"
private_dir "$dest" || exit 2
cp -a "$source/." "$dest/"
rm -rf "$dest/debian" "$dest/.pc"
cd "$dest"
export GIT_AUTHOR_NAME="pgbisect history" GIT_AUTHOR_EMAIL="history@example.org"
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
# Fixed dates make the same source give the same SHAs, so rerunning a hunt
# on a remade history continues it instead of starting over.
dated() { # N: commit N's date, $step seconds after commit N-1's
  export GIT_AUTHOR_DATE="$(( 1767225600 + step * $1 )) +0000" GIT_COMMITTER_DATE="$(( 1767225600 + step * $1 )) +0000"
}
git init -q -b main
git add -A
dated 0
git commit -q -m "PostgreSQL source"
git tag good

files=(src/backend/utils/adt/int.c src/backend/utils/adt/float.c src/backend/utils/adt/varchar.c
       src/backend/utils/adt/date.c src/backend/utils/adt/numeric.c src/backend/utils/adt/bool.c
       src/backend/utils/adt/oid.c src/backend/utils/adt/char.c src/backend/commands/analyze.c
       src/backend/commands/cluster.c)

inject() { # FILE FUNCTION-CALL-LINE
  python3 - "$1" "$2" "$spin" <<'PY'
import sys
path, anchor, spin = sys.argv[1], sys.argv[2], sys.argv[3]
s = open(path).read()
block = "\n\t{\n\t\tvolatile int spin;\n\n\t\tfor (spin = 0; spin < %s; spin++)\n\t\t\t;\n\t}\n" % spin
i = s.index(anchor) + len(anchor)
open(path, "w").write(s[:i] + block + s[i:])
PY
}

for i in $(seq 1 "$commits"); do
  dated "$i"
  if [ "$i" = "$first_slow" ]; then
    inject src/backend/executor/execMain.c $'\tpgstat_report_query_id(queryDesc->plannedstmt->queryId, false);\n'
    git commit -q -am "Do extra work in ExecutorStart"
    echo "slow: $(git rev-parse HEAD) ExecutorStart"
  elif [ "$i" = "$second_slow" ]; then
    inject src/backend/executor/execMain.c $'ExecutorEnd(QueryDesc *queryDesc)\n{\n'
    git commit -q -am "Do extra work in ExecutorEnd"
    echo "slow: $(git rev-parse HEAD) ExecutorEnd"
  else
    f=${files[$(( i % ${#files[@]} ))]}
    sed -i "1s|^|/* history change $i */\n|" "$f"
    git commit -q -am "Comment change $i in $(basename "$f")"
  fi
done
git tag -f bad >/dev/null
echo "history: $dest ($(git rev-list --count good..bad) commits after good)"
