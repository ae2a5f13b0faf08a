#!/usr/bin/env bash
# Measures the two ways a hunt over several hosts can have a commit's
# PostgreSQL install on every host (BENCHMARKS.md, "More machines"):
#   copy:   built once, the install tree sent to each host with
#           `tar -cf - . | ssh HOST 'tar -xf -'`, as the ssh back end sends it;
#   ccache: built on each host, the compiler's results shared through
#           ccache's remote storage (`remote_storage = file:DIR`).
# Builds as pgbisect's builder does (src/build/tree.rs): a build tree
# outside the checkout, the same configure arguments, the library
# directories first, then `make install DESTDIR=...` of the directories
# the benchmark needs; CCACHE_BASEDIR the checkout's and the tree's common
# folder. "host1" builds with empty caches (filling the remote storage);
# "host2" builds the same source in a folder of its own with an empty
# local cache and the filled remote storage, as a second host would.
#
# Usage: scripts/bench-install-sharing.sh SOURCE ROOT [SSH_HOST [SSH_CONFIG]]
#   SOURCE  an unconfigured PostgreSQL source tree (copied, not changed)
#   ROOT    a scratch folder (emptied)
set -euo pipefail
src=$(cd "$1" && pwd)
root=$2
host=${3:-pgbisect-a}
ssh_config=${4:-/etc/pgbisect-hosts/ssh_config}
jobs=${JOBS:-2}
. "$(dirname "$0")/private-dir.sh"
# The folder above ROOT checked before ROOT is emptied: through a link
# there, `rm -rf` would empty another folder.
private_dir "$(dirname "$root")" || { echo "bench-install-sharing: cannot write into $(dirname "$root"): give a folder of your own" >&2; exit 2; }
rm -rf "$root" && private_dir "$root/remote"
root=$(cd "$root" && pwd)
prefix=/opt/pgbisect/pgsql
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }

# use NAME: the caches of the "host" ROOT/NAME.
use() {
  export CCACHE_DIR=$root/$1/ccache CCACHE_REMOTE_STORAGE=file:$root/remote CCACHE_BASEDIR=$root/$1
}

# make_install NAME STAGE: the library directories, then the benchmark's
# directories installed into STAGE, in ROOT/NAME's configured build tree.
make_install() {
  local h=$root/$1 d
  for d in src/port src/common src/fe_utils; do
    LC_ALL=C make -s -j"$jobs" -C "$h/build/$d" >>"$h/make.log" 2>&1
  done
  for d in src/interfaces/libpq src/backend src/backend/utils/mb/conversion_procs \
      src/backend/snowball src/timezone src/pl/plpgsql src/bin/initdb src/bin/pg_ctl \
      src/bin/psql src/bin/pgbench contrib/pgbench; do
    [ -f "$h/checkout/$d/Makefile" ] || continue
    LC_ALL=C make -s -j"$jobs" -C "$h/build/$d" install DESTDIR="$2" >>"$h/make.log" 2>&1
  done
}

# build NAME: configure, make and stage an install under ROOT/NAME.
build() {
  local h=$root/$1
  mkdir -p "$h/ccache" "$h/build" "$h/stage"
  cp -a "$src" "$h/checkout"
  use "$1"
  ccache -z >/dev/null
  local t0 t1
  t0=$(now)
  (cd "$h/build" && LC_ALL=C "$h/checkout/configure" --prefix=$prefix --enable-depend \
      --without-readline --without-zlib --without-icu --without-openssl --disable-rpath \
      CFLAGS=-O2 "LDFLAGS=-Wl,-rpath,'\$\$ORIGIN/../lib'" "CC=ccache gcc") >"$h/configure.log"
  echo "$1: configure $(since "$t0") s"
  t1=$(now)
  make_install "$1" "$h/stage"
  echo "$1: make and install $(since "$t1") s"
  echo "$1: total $(since "$t0") s"
  ccache -s -v | grep -E 'Hits|Misses|Cacheable|Remote storage|Local storage' | sed "s/^/$1: /"
}

# rebuild NAME WHAT: one more build in ROOT/NAME's tree, as for the next
# commit of a bisection (make decides what to compile again).
rebuild() {
  local h=$root/$1 t0
  use "$1"
  ccache -z >/dev/null
  rm -rf "$h/stage2"
  t0=$(now)
  make_install "$1" "$h/stage2"
  echo "$1, $2: $(since "$t0") s; ccache: $(ccache -s | grep -E '^ *(Hits|Misses)' | head -2 | tr -s ' ' | tr '\n' ';')"
}

# send N: the install to ROOT/on-HOST-N over ssh, as the back end sends it
# (src/hosts/ssh.rs, `send`).
send() {
  local dest=$root/on-$host-$1 t0
  t0=$(now)
  tar -C "$install" -cf - . | ssh -F "$ssh_config" -o BatchMode=yes "$host" \
    "set -e; rm -rf $dest.part; mkdir -p $dest.part; tar -C $dest.part -xf -; rm -rf $dest; mv $dest.part $dest"
  echo "copy $1 to $host: $(since "$t0") s"
}

echo "ccache: $(ccache --version | head -1); jobs: $jobs; load: $(cut -d' ' -f1-3 /proc/loadavg)"
build host1
install=$root/host1/stage$prefix
echo "install tree: $(du -sb "$install" | cut -f1) bytes ($(du -sh "$install" | cut -f1)), $(find "$install" -type f | wc -l) files"
echo "as gzip would send it: $(tar -C "$install" -cf - . | gzip -1 | wc -c) bytes"

for i in 1 2 3 4; do send "$i"; done

build host2
cmp <(cd "$install" && find . -type f | sort) \
  <(cd "$root/host2/stage$prefix" && find . -type f | sort) && echo "host2's install has the same files"
echo "remote storage: $(du -sh "$root/remote" | cut -f1), $(find "$root/remote" -type f | wc -l) files"

# The next step of a bisection: nothing changed, then one backend file
# changed, compiled on host1 first (filling the remote storage), then
# built on host2.
rebuild host2 "nothing changed"
for h in host1 host2; do
  printf 'int pgbisect_bench_step(void);\nint pgbisect_bench_step(void) { return 42; }\n' \
    >> "$root/$h/checkout/src/backend/access/heap/heapam.c"
done
rebuild host1 "heapam.c changed (compiled: fills the remote storage)"
rebuild host2 "heapam.c changed (the remote storage has it)"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
