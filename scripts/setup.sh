#!/usr/bin/env bash
# Installs what pgbisect and its tests need on a Debian machine:
# the tools to build PostgreSQL from git (bison, flex, ccache) and, for the
# tests, Debian's PostgreSQL 15 source package and server binaries,
# Linux perf for CPU profiles, and Chromium for the site's browser test.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
need_root() { [ "$(id -u)" = 0 ] || { echo "setup.sh: run as root (it uses apt-get)" >&2; exit 1; }; }

packages=(build-essential bison flex ccache perl pkg-config git dpkg-dev
          postgresql-15 postgresql-client-15 python3)
# msmtp: a real sendmail-compatible client for the mail tests.
packages+=(msmtp)
# libssl-dev: TLS to a shared PostgreSQL store; openssl: its test's certificates.
packages+=(libssl-dev openssl)
# linux-perf: CPU profiles of the server (and the test that records one).
packages+=(linux-perf)
# valgrind: cachegrind counts the server's instructions (--measure instructions).
packages+=(valgrind)
# chromium: the headless browser that loads the watcher's site in its test.
packages+=(chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  need_root
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's PostgreSQL 15 source, unpacked once, for the build tests.
src_cache="$here/.pgbisect-test-cache"
if [ ! -f "$src_cache/postgresql-15/configure" ]; then
  need_root
  if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ && ! grep -qs '^deb-src' /etc/apt/sources.list; then
    if [ -f /etc/apt/sources.list.d/debian.sources ]; then
      sed -i 's/^Types: deb$/Types: deb deb-src/' /etc/apt/sources.list.d/debian.sources
    else
      sed -n 's/^deb /deb-src /p' /etc/apt/sources.list > /etc/apt/sources.list.d/pgbisect-src.list
    fi
    apt-get update -qq
  fi
  rm -rf "$src_cache/unpack" && mkdir -p "$src_cache/unpack"
  chmod 755 "$src_cache"
  # The source of the installed version first: a newer one in the package
  # lists may not be downloadable.
  installed=$(dpkg-query -W -f='${Version}' postgresql-15 2>/dev/null || true)
  (cd "$src_cache/unpack" &&
    { { [ -n "$installed" ] && apt-get source -qq "postgresql-15=$installed"; } ||
      apt-get source -qq postgresql-15; } > "$src_cache/apt-source.log" 2>&1) ||
    { echo "setup.sh: apt-get source postgresql-15 failed:" >&2; tail -5 "$src_cache/apt-source.log" >&2; exit 1; }
  dir=$(find "$src_cache/unpack" -maxdepth 1 -type d -name 'postgresql-15*' | head -n 1)
  [ -n "$dir" ] || { echo "setup.sh: apt-get source postgresql-15 gave no source tree" >&2; exit 1; }
  rm -rf "$src_cache/postgresql-15" && mv "$dir" "$src_cache/postgresql-15"
  rm -rf "$src_cache/unpack"
fi
# Python's aiosmtpd: the local SMTP server the mail tests deliver to, for
# whichever python3 is first on PATH.
if ! python3 -c 'import aiosmtpd' 2>/dev/null; then
  if python3 -m pip --version >/dev/null 2>&1; then
    python3 -m pip install --quiet aiosmtpd 2>/dev/null ||
      python3 -m pip install --quiet --break-system-packages aiosmtpd
  else
    need_root
    apt-get install -y -qq --no-install-recommends python3-aiosmtpd >/dev/null
  fi
  python3 -c 'import aiosmtpd' || { echo "setup.sh: cannot install Python's aiosmtpd" >&2; exit 1; }
fi
echo "setup.sh: ready (PostgreSQL 15 source in $src_cache/postgresql-15)"
