#!/bin/sh
# Noise of pgbench runs under each CPU placement of server and client.
#
#   scripts/placement-noise.sh [WORK] [ROUNDS] [SECONDS] [CLIENTS...]
#
# Makes a scale-10 database with the PostgreSQL binaries in $PGBIN
# (default /usr/lib/postgresql/15/bin) in WORK (default
# /var/tmp/pgbisect-placement), as user postgres when run as root, and
# runs select-only -M prepared at each client count (default: 1 and the
# number of CPUs) and TPC-B at 1 client. Each round runs every placement
# once, interleaved, so a change of the machine's speed falls on all of
# them alike:
#   unpinned  no affinity set
#   same-cpu  postmaster (so every backend) and pgbench on the last CPU
#   split     postmaster on the last CPU, pgbench on the others
# The postmaster's affinity (and its children's) is changed between runs
# with `taskset -p`, so each run's backend, forked at connection time,
# inherits it. Prints every run, then median, CV and (max-min)/max per
# workload and placement; `uptime` before and after each series.
set -eu
WORK=${1:-/var/tmp/pgbisect-placement}
ROUNDS=${2:-9}
SECS=${3:-5}
shift $(( $# < 3 ? $# : 3 ))
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
NCPU=$(nproc)
LAST=$((NCPU - 1))
OTHERS="0-$((LAST - 1))"
[ "$NCPU" -gt 1 ] || { echo "needs at least 2 CPUs" >&2; exit 2; }
[ "$LAST" -gt 1 ] || OTHERS=0
CLIENTS=${*:-"1 $NCPU"}
PORT=54329
SOCK=$WORK/sock
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
. "$(dirname "$0")/private-dir.sh"
# Every level checked (a folder another user made first, or a link, would
# have root write through what they planted); the last one may be
# postgres's, whose server writes there.
PGUID=$( [ "$(id -u)" = 0 ] && id -u postgres || id -u )
private_dir "$WORK" "$PGUID" || { echo "placement-noise: cannot write into $WORK: give a folder of your own" >&2; exit 2; }
if [ "$(id -u)" = 0 ]; then chown postgres: "$WORK"; fi
if [ ! -f "$WORK/data/PG_VERSION" ]; then
  as_pg "$PGBIN/initdb" -D "$WORK/data" >/dev/null
fi
as_pg mkdir -p "$SOCK"
as_pg "$PGBIN/pg_ctl" -w -D "$WORK/data" -l "$WORK/server.log" \
  -o "-p $PORT -k $SOCK -c listen_addresses=" start >/dev/null
trap 'as_pg "$PGBIN/pg_ctl" -D "$WORK/data" -m fast -w stop >/dev/null' EXIT
PM=$(head -1 "$WORK/data/postmaster.pid")
bench() { as_pg "$PGBIN/pgbench" -h "$SOCK" -p "$PORT" "$@" postgres; }
bench -i -q -s 10 >/dev/null 2>&1
place_server() {
  for pid in $PM $(pgrep -P "$PM"); do taskset -a -pc "$1" "$pid" >/dev/null; done
}
run() { # placement, pgbench args...
  placement=$1; shift
  case $placement in
    unpinned) place_server "0-$LAST"; cpus="0-$LAST" ;;
    same-cpu) place_server "$LAST"; cpus=$LAST ;;
    split)    place_server "$LAST"; cpus=$OTHERS ;;
  esac
  as_pg taskset -c "$cpus" "$PGBIN/pgbench" -h "$SOCK" -p "$PORT" "$@" postgres \
    2>/dev/null | sed -n 's/^tps = \([0-9.]*\).*/\1/p'
}
OUT=$WORK/runs.csv
: > "$OUT"
series() { # name, pgbench args...
  name=$1; shift
  echo "# $name: $(uptime)"
  run unpinned "$@" -T 3 >/dev/null # warm-up
  r=1
  while [ "$r" -le "$ROUNDS" ]; do
    for p in unpinned same-cpu split; do
      tps=$(run "$p" "$@" -T "$SECS")
      echo "$name,$p,$r,$tps" | tee -a "$OUT"
    done
    r=$((r + 1))
  done
  echo "# $name done: $(uptime)"
}
for c in $CLIENTS; do
  series "select-only c$c" -n -M prepared -S -c "$c" -j "$c"
done
series "tpcb c1" -n -M prepared -c 1 -j 1
echo
echo "workload,placement,runs,median,cv%,(max-min)/max%"
sort -t, -k1,1 -k2,2 -k4,4n "$OUT" | awk -F, '
  function flush() {
    if (n == 0) return
    med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
    mean = s / n; var = 0
    for (i = 1; i <= n; i++) var += (v[i] - mean) ^ 2
    sd = (n > 1) ? sqrt(var / (n - 1)) : 0
    printf "%s,%s,%d,%.0f,%.1f,%.1f\n", w, p, n, med, 100 * sd / mean, 100 * (v[n] - v[1]) / v[n]
  }
  $1 != w || $2 != p { flush(); w = $1; p = $2; n = 0; s = 0 }
  { v[++n] = $4; s += $4 }
  END { flush() }'
