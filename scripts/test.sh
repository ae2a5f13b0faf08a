#!/usr/bin/env bash
# The project's test command: installs what the tests need, then runs them.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/setup.sh"
# sshd on localhost under three names and a single-node Slurm cluster, for
# the tests that hunt through the hosts' back ends (tests only: a hunt on
# this machine needs neither). The set-up changes root's ssh config and
# authorized keys and the machine's Slurm and munge config, so it runs only
# under CI or when asked; without it tests/hosts_cli.rs says it is skipped.
case "${CI:-}" in "" | false | 0) ci= ;; *) ci=1 ;; esac
if [ -n "$ci" ] || [ "${PGBISECT_HOST_TESTS:-}" = 1 ]; then
  "$here/scripts/hosts-setup.sh"
  host_tests=1
else
  echo "test.sh: host tests skipped (their set-up changes root's ssh and Slurm config); to run them: PGBISECT_HOST_TESTS=1 scripts/test.sh"
  host_tests=
fi
cd "$here"
export PGBISECT_TEST_PG_SOURCE="$here/.pgbisect-test-cache/postgresql-15"
export PGBISECT_TEST_PG_BIN="/usr/lib/postgresql/15/bin"
# The ssh hosts and the Slurm node hosts-setup.sh made (tests/hosts_cli.rs).
if [ -n "$host_tests" ]; then
  set -a
  . "$here/.pgbisect-test-cache/hosts.env"
  set +a
fi
# Snapshots (tests/snapshots/: reports, --help, usage errors) are compared,
# never rewritten: a changed output fails the run until the snapshot is
# reviewed and updated.
export INSTA_UPDATE=no
# Output kept to count, at the end, the tests that could not check anything
# here: they pass, print `skipped: ...` and are counted as passed by cargo.
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --release --all-targets 2>&1 | tee "$log"
# The reliability probes (bad inputs, kills, hangs, planted links) against
# the binary the tests just built.
cargo build --release -q
"$here/scripts/reliability.sh" 2>&1 | tee -a "$log"
passed=$(awk '/^test result: ok\./ { n += $4 } END { print n + 0 }' "$log")
skipped=$(grep -c '^skipped: ' "$log" || true)
probes=$(grep -c '^  skipped: ' "$log" || true)
echo "test.sh: $passed tests passed; $skipped of them skipped what they check and $probes groups of reliability probes were skipped (each said why above)"
if [ "$skipped" -gt 0 ] || [ "$probes" -gt 0 ]; then
  echo "test.sh: CI runs them all (CI=true); here, PGBISECT_HOST_TESTS=1 runs the host tests and probes"
fi
