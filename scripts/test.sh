#!/usr/bin/env bash
# The project's test command: installs what the tests need, then runs them.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
"$here/scripts/setup.sh"
# sshd on localhost under three names and a single-node Slurm cluster, for
# the tests that hunt through the hosts' back ends (tests only: a hunt on
# this machine needs neither). The set-up changes root's ssh config and
# authorized keys and the machine's Slurm and munge config, so it runs only
# under CI or when asked; without it tests/integration/hosts_cli.rs says it is skipped.
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
# The ssh hosts and the Slurm node hosts-setup.sh made (tests/integration/hosts_cli.rs).
if [ -n "$host_tests" ]; then
  set -a
  . "$here/.pgbisect-test-cache/hosts.env"
  set +a
fi
# Snapshots (tests/integration/snapshots/: reports, --help, usage errors) are compared,
# never rewritten: a changed output fails the run until the snapshot is
# reviewed and updated.
export INSTA_UPDATE=no
# The tests' own build profile (Cargo.toml's `suite`: dependencies
# optimized, pgbisect at opt-level 1), and the targets that hold tests:
# the library, the binary, the one integration-test binary and the three
# examples with unit tests.
profile=suite
targets=(--lib --bins --tests --example study_kary --example study_pba --example study_run_length)
target_dir=${CARGO_TARGET_DIR:-$here/target}
# Output kept to count the tests at the end; the tests that could not
# check anything here pass and write `skipped: ...` to this file.
log=$(mktemp)
skips=$(mktemp)
export PGBISECT_TEST_SKIPS="$skips"
if [ "${1:-}" = --quick ]; then
  # The quick loop for edits: the library's unit tests and the
  # integration tests that need neither PostgreSQL nor the hosts.
  shift
  quick=1
else
  quick=
fi
probes_log=$(mktemp)
trap 'rm -f "$log" "$skips" "$probes_log"; [ -n "${probes_pid:-}" ] && kill -- "-$probes_pid" 2>/dev/null; true' EXIT
if [ -z "$quick" ]; then
  # The reliability probes (bad inputs, kills, hangs, planted links) wait
  # far more than they compute: they run against the suite's binary while
  # the tests are built and run, and say what held at the end.
  cargo build --profile "$profile" --bins
  # Their own process group, so that a failed test run stops them all.
  PGBISECT_BIN="$target_dir/$profile/pgbisect" setsid "$here/scripts/reliability.sh" > "$probes_log" 2>&1 &
  probes_pid=$!
fi
if cargo nextest --version >/dev/null 2>&1; then
  # Every test in its own process, the binaries side by side, the longest
  # tests first; --quick's selection is nextest's `quick` profile
  # (.config/nextest.toml).
  runner=default
  [ -n "$quick" ] && runner=quick
  cargo nextest run --cargo-profile "$profile" --profile "$runner" "${targets[@]}" "$@" 2>&1 | tee "$log"
  passed=$(sed -n 's/.* tests run: \([0-9]*\) passed.*/\1/p' "$log" | tail -n 1)
else
  echo "test.sh: cargo-nextest is not installed: running the tests with cargo test, one binary after another (slower; cargo install cargo-nextest --locked)"
  [ -n "$quick" ] && { echo "test.sh: --quick needs cargo-nextest" >&2; exit 2; }
  cargo test --profile "$profile" "${targets[@]}" "$@" 2>&1 | tee "$log"
  passed=$(awk '/^test result: ok\./ { n += $4 } END { print n + 0 }' "$log")
fi
skipped=$(grep -c '^skipped: ' "$skips" || true)
if [ -n "$quick" ]; then
  echo "test.sh: quick: ${passed:-0} tests passed ($skipped skipped what they check); the PostgreSQL, host and browser tests and the reliability probes did not run"
  exit 0
fi
probes_ok=1
wait "$probes_pid" || probes_ok=
probes_pid=
tee -a "$log" < "$probes_log"
[ -n "$probes_ok" ] || { echo "test.sh: a reliability probe did not hold (above)" >&2; exit 1; }
probes=$(grep -c '^  skipped: ' "$log" || true)
[ "$skipped" -gt 0 ] && cat "$skips"
echo "test.sh: ${passed:-0} tests passed; $skipped of them skipped what they check and $probes groups of reliability probes were skipped (each said why above)"
if [ "$skipped" -gt 0 ] || [ "$probes" -gt 0 ]; then
  echo "test.sh: CI runs them all (CI=true); here, PGBISECT_HOST_TESTS=1 runs the host tests and probes"
fi
