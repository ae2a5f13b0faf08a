#!/usr/bin/env bash
# Tries pgbisect on real PostgreSQL: a short history of Debian's PostgreSQL
# 15 source with two injected slowdowns, hunted with the smoke profile.
#   scripts/try-it.sh [WORK]     (default /var/tmp/pgbisect-try)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
work=${1:-/var/tmp/pgbisect-try}
. "$here/scripts/private-dir.sh"
private_dir "$work" || { echo "try-it: cannot write into $work: give a folder of your own" >&2; exit 2; }
"$here/scripts/setup.sh"
(cd "$here" && cargo build --release -q)
"$here/scripts/make-history.sh" "$work/postgres" 8 3 6
set +e
"$here/target/release/pgbisect" --repo "$work/postgres" --good good --bad bad \
  --profile smoke --work-dir "$work/work" --json "$work/result.json"
code=$?
set -e
echo "exit code $code; result in $work/result.json; the report again:"
echo "    $here/target/release/pgbisect report --work-dir $work/work"
echo "(the hunt's folder is under $work/work/hunts/; rm -rf $work removes everything this made)"
exit "$code"
