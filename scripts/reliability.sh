#!/usr/bin/env bash
# Reliability probes: bad inputs, kills, hangs, links planted in the work
# dir, and a foreign work dir, each against a real git repository and the
# custom-command lab (no PostgreSQL is built). Prints one line per probe
# and a table of what held; exits non-zero when a probe did not hold.
#
#   scripts/reliability.sh [WORK]     (WORK defaults to a new temp dir;
#   PGBISECT_BIN names another pgbisect binary to probe)
set -uo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
work=${1:-$(mktemp -d /var/tmp/pgbisect-reliability.XXXXXX)}
bin=${PGBISECT_BIN:-$here/target/release/pgbisect}
[ -x "$bin" ] || (cd "$here" && cargo build --release -q) || exit 1
mkdir -p "$work" && chmod 755 "$work"
export GIT_AUTHOR_NAME=probe GIT_AUTHOR_EMAIL=probe@example.org
export GIT_COMMITTER_NAME=probe GIT_COMMITTER_EMAIL=probe@example.org

# A 30-commit history whose `level` file drops 20% at commit 19.
repo="$work/repo"
rm -rf "$repo" && git init -q -b main "$repo"
for i in $(seq 1 30); do
  if [ "$i" -ge 19 ]; then echo 800 > "$repo/level"; else echo 1000 > "$repo/level"; fi
  echo "$i" > "$repo/n"
  git -C "$repo" add -A && git -C "$repo" commit -q -m "commit $i"
done
git -C "$repo" tag good HEAD~29 && git -C "$repo" tag bad HEAD
culprit=$(git -C "$repo" rev-parse HEAD~11)

profile() { # NAME BENCHMARK-PREFIX: a profile whose benchmark runs PREFIX first
  cat > "$work/$1.toml" <<EOF
[build]
command = "mkdir -p \"\$PGBISECT_PREFIX\" && cp level \"\$PGBISECT_PREFIX/level\""
[benchmark]
command = "$2 awk -v l=\$(cat \"\$PGBISECT_PREFIX/level\") -v s=\$PGBISECT_RUN 'BEGIN { srand(s); printf \"tps = %.1f\\\\n\", l * (1 + 0.04 * (rand() - 0.5)) }'"
EOF
  echo "$work/$1.toml"
}
plain=$(profile plain "")
slow=$(profile slow "sleep 0.3;")

held=0 failed=0
declare -A tried ok
# Sections of probes add their kinds here, with a name for the table at
# the end: extra_kinds+=(KIND); kind_name[KIND]="what held".
extra_kinds=()
declare -A kind_name
probe() { # KIND WHAT CONDITION...
  local kind=$1 what=$2; shift 2
  tried[$kind]=$(( ${tried[$kind]:-0} + 1 ))
  if "$@"; then
    ok[$kind]=$(( ${ok[$kind]:-0} + 1 )); held=$((held + 1)); echo "  held: $what"
  else
    failed=$((failed + 1)); echo "  FAILED: $what"
  fi
}
hunt() { # WORK-DIR PROFILE EXTRA...: runs a hunt, sets $rc and $out
  local w=$1 p=$2; shift 2
  out=$(cd "$repo" && "$bin" --good good --bad bad --profile "$p" --work-dir "$w" --json "$w.json" "$@" 2>&1)
  rc=$?
}
culprit_is_right() { python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if [c['commit'] for c in r['culprits']] == [sys.argv[2]] else 1)" "$1" "$culprit"; }
has() { grep -q -- "$2" <<<"$1"; }

echo "bad inputs"
bad_input() { # TEXT-EXPECTED CODE-EXPECTED ARGS...
  local want=$1 code=$2; shift 2
  out=$(cd "$repo" && "$bin" "$@" 2>&1); rc=$?
  [ "$rc" = "$code" ] && has "$out" "$want"
}
probe input "unknown revision" bad_input "unknown revision" 2 --good nope --bad bad --profile "$plain" --work-dir "$work/w-bad"
probe input "--good after --bad" bad_input "swap" 2 --good bad --bad good --profile "$plain" --work-dir "$work/w-bad"
probe input "same commit" bad_input "same commit" 2 --good bad --bad bad --profile "$plain" --work-dir "$work/w-bad"
probe input "typo in a profile key" bad_input "unknown field" 2 --good good --bad bad --profile "$(printf '[benchmark]\ncomand = "x"\n' > "$work/typo.toml"; echo "$work/typo.toml")" --work-dir "$work/w-bad"
probe input "missing profile" bad_input "profile" 2 --good good --bad bad --profile "$work/none.toml" --work-dir "$work/w-bad"
probe input "--json in a missing folder" bad_input "does not exist" 2 --good good --bad bad --profile "$plain" --work-dir "$work/w-bad" --json "$work/no/such/r.json"
probe input "--threshold 0" bad_input "between 0 and 100" 2 --good good --bad bad --profile "$plain" --work-dir "$work/w-bad" --threshold 0
probe input "--time-budget nonsense" bad_input "not a duration" 2 --good good --bad bad --profile "$plain" --work-dir "$work/w-bad" --time-budget soon
probe input "a list of clients in a hunt profile" bad_input "give --clients N" 2 --good good --bad bad --profile read-only-scaling --work-dir "$work/w-bad"
probe input "[build] command without [benchmark] command" bad_input "is not" 2 --good good --bad bad --profile "$(printf '[build]\ncommand = "true"\n' > "$work/b.toml"; echo "$work/b.toml")" --work-dir "$work/w-bad"
printf '[benchmark]\nclients = "8"\n' > "$work/clients.toml"
probe input "clients of the wrong type say what is accepted" bad_input "a client count (clients = 8) or a list" 2 --good good --bad bad --profile "$work/clients.toml" --work-dir "$work/w-bad"
git -C "$repo" branch -f oldline good
rm -rf "$work/shallow" && git clone -q --depth 5 --no-single-branch "file://$repo" "$work/shallow" 2>/dev/null
shallow_hint() { out=$("$bin" --repo "$work/shallow" --good origin/oldline --bad origin/main --profile "$plain" --work-dir "$work/w-bad" 2>&1); rc=$?; [ "$rc" = 2 ] && has "$out" "git fetch --unshallow"; }
probe input "a shallow clone cutting the range: a hint to unshallow" shallow_hint
printf '[benchmark]\ncommand = "echo tps = 0"\n' > "$work/zero.toml"
zero_fails() { hunt "$work/w-zero" "$work/zero.toml" --max-runs 4; [ "$rc" = 4 ] && has "$out" "no transaction completed"; }
probe input "tps = 0 is a failed run, not a measurement" zero_fails

# The hunt just rerun ended with the right culprit, and its journal holds
# no run twice.
resumed_exactly() {
  [ "$rc" = 0 ] && culprit_is_right "$1.json" && python3 - "$1" <<'PY'
import glob, json, sys
events = [json.loads(l) for l in open(glob.glob(sys.argv[1] + "/hunts/*/journal.jsonl")[0])]
runs = [e["run"] for e in events if e.get("event") == "run"]
sys.exit(0 if runs and len(runs) == len(set(runs)) else 1)
PY
}

echo "kills at random points, then the same command again"
for i in 1 2 3; do
  w="$work/w-kill$i"
  (cd "$repo" && exec "$bin" --good good --bad bad --profile "$slow" --work-dir "$w" >/dev/null 2>&1) &
  pid=$!
  sleep "$(python3 -c "import random; print(round(random.uniform(1.0, 6.0), 2))")"
  kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
  hunt "$w" "$slow"
  probe kill "kill -9 #$i, resumed: the same culprit, every run journaled once" resumed_exactly "$w"
done

# A kill between a run's record and its cost record: the journal's last
# cost record is taken out of a finished hunt; rerun, every journaled run
# is counted in the totals.
w="$work/w-count"
hunt "$w" "$plain"
counted_once() {
  python3 - "$w" <<'PY'
import glob, json, sys
path = glob.glob(sys.argv[1] + "/hunts/*/journal.jsonl")[0]
lines = open(path).read().splitlines()
last = max(i for i, l in enumerate(lines) if json.loads(l).get("event") == "spent")
del lines[last]
open(path, "w").write("".join(l + "\n" for l in lines))
PY
  hunt "$w" "$plain"
  [ "$rc" = 0 ] && python3 - "$w" <<'PY'
import glob, json, sys
events = [json.loads(l) for l in open(glob.glob(sys.argv[1] + "/hunts/*/journal.jsonl")[0])]
runs = sum(1 for e in events if e.get("event") == "run")
total = json.load(open(sys.argv[1] + ".json"))["totals"]["runs"]
sys.exit(0 if total == runs else 1)
PY
}
probe kill "a kill between a run's record and its cost record: the run still counts" counted_once

echo "hangs and signals"
hang=$(profile hang "sleep 600;")
w="$work/w-hang"
(cd "$repo" && exec "$bin" --good good --bad bad --profile "$hang" --work-dir "$w" >/dev/null 2>"$work/hang.err") &
pid=$!
sleep 2
start=$(date +%s)
kill -TERM "$pid"; wait "$pid"; code=$?
took=$(( $(date +%s) - start ))
stopped_in_time() { [ "$took" -le 10 ] && [ "$code" != 0 ]; }
nothing_left() { ! pgrep -f 'sleep 600' >/dev/null && [ ! -e "$w/lock" ]; }
probe hang "SIGTERM while the benchmark hangs stops the hunt (${took} s)" stopped_in_time
probe hang "no child left, no lock left" nothing_left
printf '[benchmark]\ncommand = "sleep 600; echo tps = 5"\ntimeout = 2\n' > "$work/timeout.toml"
hunt "$work/w-timeout" "$work/timeout.toml" --max-runs 4
probe hang "a benchmark past its timeout is a failed run" has "$out" "did not finish in 2 s"

# A tree the PostgreSQL builder takes on, and a `make` first on PATH that
# starts a long sleep and waits, as a slow compile would.
pgrepo="$work/pgrepo"
rm -rf "$pgrepo" && git init -q -b main "$pgrepo" && mkdir -p "$pgrepo/src/port"
echo 'all:' > "$pgrepo/src/port/Makefile"
printf '#!/bin/sh\nexit 0\n' > "$pgrepo/configure" && chmod +x "$pgrepo/configure"
for i in 1 2 3; do echo "$i" > "$pgrepo/n"; git -C "$pgrepo" add -A; git -C "$pgrepo" commit -q -m "commit $i"; done
fake_make() { # DIR DEAF: a make recording "its pid, its sleep's pid" in DIR/pids
  mkdir -p "$1"; rm -f "$1/pids"
  printf '#!/bin/sh\n%ssleep 600 &\necho "$$ $!" > %s/pids.tmp; mv %s/pids.tmp %s/pids\nwait\n' \
    "$([ "$2" = deaf ] && echo "trap '' TERM; ")" "$1" "$1" "$1" "$1" > "$1/make"
  chmod +x "$1/make"
}
build_stop() { # NAME DEAF SIGNALS...: a hunt stopped while make runs; sets $took $code $err
  local fb="$work/fb-$1" w="$work/w-$1"; shift
  fake_make "$fb" "$1"; shift
  rm -rf "$w" && mkdir -p "$w" && chmod 755 "$w"
  PATH="$fb:$PATH" "$bin" --repo "$pgrepo" --good HEAD~2 --bad HEAD --work-dir "$w" >/dev/null 2>"$w.err" &
  local pid=$!
  for _ in $(seq 1 240); do [ -e "$fb/pids" ] && break; sleep 0.25; done
  local start; start=$(date +%s.%N)
  for sig in "$@"; do kill "-$sig" "$pid"; sleep 0.5; done
  for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || break; sleep 0.25; done
  took=$(python3 -c "import sys; print(round($(date +%s.%N) - $start, 1))")
  make_pids=$(cat "$fb/pids" 2>/dev/null); stopped_dir=$w
  if kill -0 "$pid" 2>/dev/null; then # not stopped in 30 s: ended here, and the probe fails
    kill -9 "$pid"; wait "$pid"; code=timeout
    no_child_no_lock || kill -9 $make_pids 2>/dev/null
  else
    wait "$pid"; code=$?
  fi
  err=$(cat "$w.err")
}
no_child_no_lock() {
  sleep 1
  # A process runs when its state reads and is not a zombie's: one this
  # machine's first process reaps late is a zombie, then gone between two
  # looks, and neither is left running.
  local p state
  for p in $make_pids; do
    state=$(sed -n 's/.*) \(.\) .*/\1/p' "/proc/$p/stat" 2>/dev/null)
    if [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]; then return 1; fi
  done
  [ -n "$make_pids" ] && [ ! -e "$stopped_dir/lock" ]
}
build_stop make-term plain TERM
probe hang "SIGTERM while make builds stops the hunt (${took} s, exit $code)" test "$code" = 4 -a "${took%.*}" -le 10
probe hang "no make, no compile, no lock left after it" no_child_no_lock
build_stop make-twice deaf TERM INT
probe hang "a second signal while stopping a make deaf to SIGTERM ends it (${took} s, exit $code)" test \( "$code" = 4 -o "$code" = 130 \) -a "${took%.*}" -le 10
probe hang "no child, no lock left after two signals" no_child_no_lock

echo "links planted in the work dir, and a work dir of another user"
w="$work/w-links"
hunt "$w" "$plain"
echo precious > "$work/precious"
for h in "$w"/hunts/*; do
  for f in result.json report.txt report.md chart.svg command.json profile.json; do ln -sf "$work/precious" "$h/$f"; done
  for f in "$h"/runs/*; do ln -sf "$work/precious" "$f"; done
done
for f in "$w"/logs/*; do ln -sf "$work/precious" "$f"; done
rm -rf "$w"/installs/*
hunt "$w" "$plain"
untouched() { [ "$(cat "$work/precious")" = precious ]; }
links_held() { [ "$rc" = 0 ] && untouched; }
probe link "links at the reports, runs and logs leave their target untouched" links_held
h=$(ls -d "$w"/hunts/* | head -1)
mv "$h/journal.jsonl" "$work/journal.bak" && ln -s "$work/precious" "$h/journal.jsonl"
hunt "$w" "$plain"
journal_refused() { [ "$rc" = 4 ] && has "$out" "symbolic link" && untouched; }
probe link "a linked journal is refused" journal_refused
rm "$h/journal.jsonl" && mv "$work/journal.bak" "$h/journal.jsonl"
rm -rf "$w/checkout" && ln -s "$work" "$w/checkout"
hunt "$w" "$plain"
probe link "a linked checkout is refused" has "$out" "symbolic link"
if [ "$(id -u)" = 0 ]; then
  closed=$(mktemp -d /var/tmp/pgbisect-closed.XXXXXX)
  out=$("$bin" --repo "$pgrepo" --good HEAD~2 --bad HEAD --work-dir "$closed/w" 2>&1); rc=$?
  unreachable_refused() { [ "$rc" = 2 ] && has "$out" "cannot reach the work dir" && has "$out" "chmod o+x" && ! ls "$closed"/w/logs/build-* >/dev/null 2>&1; }
  probe link "a work dir the server's user cannot reach (mktemp -d) is refused before any build" unreachable_refused
  rm -rf "$closed"
  mkdir -p "$work/w-foreign" && chown nobody "$work/w-foreign"
  hunt "$work/w-foreign" "$plain"
  foreign_refused() { [ "$rc" = 2 ] && has "$out" "belongs to another user"; }
  probe link "a work dir of another user is refused" foreign_refused
fi

# ---------------------------------------------------------------------------
# Hardening, second round: every level of the work dir, a full disk during
# a build, relative work dirs, journals of other hunts or with repeated
# lines, profile errors and misc messages. Self-contained: it makes its own
# work dirs (w2-*), profiles and refs, and removes the refs it adds.
echo "hardening (second round): work dir levels, full disk, journals, profiles, messages"
extra_kinds+=(owner disk journal config)
kind_name[owner]="work dir levels: owner, mode, links"
kind_name[disk]="full disk during a build: resumable"
kind_name[journal]="journals: own plan, each run once"
kind_name[config]="profiles and flags: clear usage errors"
refused() { # CODE TEXT: the last command exited CODE saying TEXT
  [ "$rc" = "$1" ] && has "$out" "$2"
}
fresh_hunt() { # NAME: a finished hunt in $work/w2-NAME (sets $w)
  w="$work/w2-$1"; rm -rf "$w" "$w.json"; hunt "$w" "$plain"
}
if [ "$(id -u)" = 0 ]; then
  fresh_hunt open; chmod 777 "$w"
  hunt "$w" "$plain"
  probe owner "a work dir open to all (777) is refused" refused 2 "writable by other users"
  rm -rf "$work/w2-openparent" && mkdir -p "$work/w2-openparent" && chmod 777 "$work/w2-openparent"
  hunt "$work/w2-openparent/w" "$plain"
  opened_parent() { refused 2 "w2-openparent is writable by other users" && [ ! -e "$work/w2-openparent/w" ]; }
  probe owner "a work dir inside a folder open to all is refused before it is made" opened_parent
  for level in installs hunts logs; do
    fresh_hunt "foreign-$level"; chown nobody "$w/$level"
    hunt "$w" "$plain"
    probe owner "$level/ owned by another user is refused" refused 2 "$level belongs to another user"
  done
  fresh_hunt foreign-plan; plan_dir=$(ls -d "$w"/hunts/*); chown nobody "$plan_dir"
  before=$(stat -c %Y "$plan_dir/result.json")
  hunt "$w" "$plain"
  plan_refused() { refused 2 "belongs to another user" && [ "$(stat -c %Y "$plan_dir/result.json")" = "$before" ]; }
  probe owner "hunts/<plan> owned by another user is refused, nothing written in it" plan_refused
  fresh_hunt group-logs; chmod 775 "$w/logs"
  hunt "$w" "$plain"
  probe owner "a logs/ writable by its group is refused" refused 2 "chmod go-w"
  fresh_hunt linked-installs; rm -rf "$work/w2-elsewhere"; mkdir -p "$work/w2-elsewhere"
  mv "$w/installs" "$work/w2-elsewhere/installs" && ln -s "$work/w2-elsewhere/installs" "$w/installs"
  hunt "$w" "$plain"
  probe owner "a linked installs/ is refused" refused 2 "installs is a symbolic link"
  fresh_hunt linked-plan; plan_dir=$(ls -d "$w"/hunts/*)
  mv "$plan_dir" "$work/w2-elsewhere/plan" && ln -s "$work/w2-elsewhere/plan" "$plan_dir"
  before=$(stat -c %Y "$work/w2-elsewhere/plan/result.json")
  hunt "$w" "$plain"
  linked_plan() { refused 2 "symbolic link" && [ "$(stat -c %Y "$work/w2-elsewhere/plan/result.json")" = "$before" ]; }
  probe owner "a linked hunts/<plan> is refused, its target untouched" linked_plan
fi

# A build that fills the disk: the hunt stops, the commit is not taken for
# one that does not build, and once space is freed the rerun finds the
# culprit. On an 8 MB tmpfs when mounting works (its log left empty), else
# writing to /dev/full.
w="$work/w2-full"; rm -rf "$w" "$w.json" "$work/w2-full.flag"; mkdir -p "$w"
mounted=no
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=8m,mode=755 tmpfs "$w" 2>/dev/null; then mounted=yes; fi
if [ "$mounted" = yes ]; then
  fill='head -c 50000000 /dev/zero > \"$PGBISECT_PREFIX/big\"'
else
  fill='head -c 100000 /dev/zero > /dev/full'
fi
cat > "$work/full.toml" <<EOF
[build]
command = "mkdir -p \"\$PGBISECT_PREFIX\" && if [ -e $work/w2-full.flag ] && [ \"\$PGBISECT_COMMIT\" = $culprit ]; then $fill; exit 1; fi; cp level \"\$PGBISECT_PREFIX/level\""
[benchmark]
command = "awk -v l=\$(cat \"\$PGBISECT_PREFIX/level\") -v s=\$PGBISECT_RUN 'BEGIN { srand(s); printf \"tps = %.1f\\\\n\", l * (1 + 0.04 * (rand() - 0.5)) }'"
EOF
touch "$work/w2-full.flag"
hunt "$w" "$work/full.toml"
full_stops() {
  [ "$rc" = 4 ] && grep -qiE "disk full|no space left on device" <<<"$out" && ! grep -q "\"commit\":\"$culprit\",\"prepared\":{\"unbuildable\"" "$w"/hunts/*/journal.jsonl
}
probe disk "a build filling the disk ($mounted tmpfs) stops the hunt; the commit is not journaled as unbuildable" full_stops
rm -f "$work/w2-full.flag" "$w"/installs/*/big
hunt "$w" "$work/full.toml"
full_resumed() { [ "$rc" = 0 ] && culprit_is_right "$w.json"; }
probe disk "space freed, the rerun builds it again and names the culprit" full_resumed
if [ "$mounted" = yes ]; then umount "$w"; fi

# A relative --work-dir: builds run in the checkout, where a relative
# prefix would name another folder.
rm -rf "$work/w2-rel" "$work/w2-rel.json"
out=$(cd "$repo" && "$bin" --good good --bad bad --profile "$plain" --work-dir ../w2-rel --json "$work/w2-rel.json" 2>&1); rc=$?
relative_ok() { [ "$rc" = 0 ] && culprit_is_right "$work/w2-rel.json" && ls "$work"/w2-rel/installs/*/level >/dev/null 2>&1; }
probe config "a relative --work-dir installs into the work dir; the culprit is found" relative_ok

# Journals: another plan's, repeated lines, an empty one.
fresh_hunt journal-a; a_journal=$(ls "$w"/hunts/*/journal.jsonl)
w="$work/w2-journal-b"; rm -rf "$w"; hunt "$w" "$plain" --threshold 10
b_journal=$(ls "$w"/hunts/*/journal.jsonl); cp "$a_journal" "$b_journal"
hunt "$w" "$plain" --threshold 10
probe journal "a journal of another plan (other threshold) is refused" refused 2 "belongs to another hunt"
fresh_hunt journal-dup
python3 - "$w" <<'PY'
import glob, json, sys
path = glob.glob(sys.argv[1] + "/hunts/*/journal.jsonl")[0]
lines = open(path).read().splitlines()
runs = [l for l in lines if json.loads(l).get("event") == "run"]
lines.insert(len(lines) // 2, runs[0])
lines.append(runs[-1])
open(path, "w").write("".join(l + "\n" for l in lines))
PY
hunt "$w" "$plain"
dup_once() {
  [ "$rc" = 0 ] && has "$out" "2 repeated journal lines skipped" && python3 - "$w" <<'PY'
import glob, json, sys
events = [json.loads(l) for l in open(glob.glob(sys.argv[1] + "/hunts/*/journal.jsonl")[0])]
runs = len({e["run"] for e in events if e.get("event") == "run"})
total = json.load(open(sys.argv[1] + ".json"))["totals"]["runs"]
sys.exit(0 if total == runs else 1)
PY
}
probe journal "a repeated journal line counts once, and is said" dup_once
fresh_hunt journal-empty
for j in "$w"/hunts/*/journal.jsonl; do : > "$j"; done
out=$("$bin" resume --work-dir "$w" 2>&1 </dev/null); rc=$?
empty_said() { has "$out" "holds no run yet: starting over" && ! has "$out" "^resuming the hunt"; }
probe journal "resume with an empty journal says it starts over" empty_said

# Profiles: settings a custom command ignores, zero timeouts, blank
# commands, and a command that prints no number.
custom_bad() { # PROFILE-TEXT EXPECTED: refused at load, nothing made
  printf '%b' "$1" > "$work/bad2.toml"
  rm -rf "$work/w2-bad"; hunt "$work/w2-bad" "$work/bad2.toml"
  refused 2 "$2" && [ ! -e "$work/w2-bad" ]
}
bench_line='[benchmark]\ncommand = "echo tps = 5"\n'
probe config "warmup-runs beside a benchmark command is refused" custom_bad "${bench_line}warmup-runs = 1000000\n" "warmup-runs is pgbench's"
probe config "timeout = 0 is refused" custom_bad "${bench_line}timeout = 0\n" "timeout = 0"
probe config "a blank benchmark command is refused" custom_bad '[benchmark]\ncommand = "  "\n' "command is empty"
probe config "[server] settings beside a benchmark command are refused" custom_bad "${bench_line}[server.settings]\nfsync = false\n" "settings is for the PostgreSQL"
printf '[benchmark]\ncommand = "echo score 12"\n' > "$work/nonumber.toml"
rm -rf "$work/w2-nonumber"; hunt "$work/w2-nonumber" "$work/nonumber.toml" --max-runs 4
no_number() { refused 4 "must print its result as a line" && ! has "$out" "pgbench printed" && ! has "$out" "nearby commit"; }
probe config "a command printing no number is told what to print, not pgbench's hints" no_number

# Misc messages.
rm -rf "$work/w2-file"; touch "$work/w2-file"; hunt "$work/w2-file" "$plain"
file_said() { refused 2 "is not a folder" && ! has "$out" "os error 17"; }
probe config "a work dir that is a file: a usage error that says so" file_said
repo2="$work/repo2"; rm -rf "$repo2" && git init -q -b main "$repo2"
for i in 1 2 3; do echo "$i" > "$repo2/level"; git -C "$repo2" add -A; git -C "$repo2" commit -q -m "other $i"; done
fresh_hunt other-repo
out=$("$bin" --repo "$repo2" --good HEAD~2 --bad HEAD --profile "$plain" --work-dir "$w" 2>&1); rc=$?
other_repo() { refused 2 "made for another repository" && ! has "$out" "cannot be peeled"; }
probe config "a work dir of another repository: a usage error that says so" other_repo
git -C "$repo" tag amb good && git -C "$repo" branch amb "$(git -C "$repo" rev-list --reverse HEAD | sed -n 2p)"
rm -rf "$work/w2-amb"; out=$(cd "$repo" && "$bin" --good amb --bad bad --profile "$plain" --work-dir "$work/w2-amb" 2>&1); rc=$?
probe config "a tag and a branch of one name: a usage error naming both" refused 2 "refs/tags/amb or refs/heads/amb"
git -C "$repo" tag -d amb >/dev/null; git -C "$repo" branch -D amb >/dev/null
rm -rf "$work/w2-runas"; hunt "$work/w2-runas" "$plain" --run-as nosuchuser
runas_refused() { refused 2 "nosuchuser" && [ ! -e "$work/w2-runas" ]; }
probe config "a bogus --run-as with a custom profile is a usage error before any work" runas_refused



# ---------------------------------------------------------------------
# Hardening: simultaneous starts, processes left behind, hard links,
# linked output paths, output capped while it is written.
echo "hardening: locks, leftovers, hard links, output paths, output caps"
extra_kinds+=(race stray hardlink outlink cap)
kind_name[race]="simultaneous starts: one runs"
kind_name[stray]="processes left behind: stopped"
kind_name[hardlink]="hard links planted: targets untouched"
kind_name[outlink]="linked output paths: refused"
kind_name[cap]="output capped while written"
journal_of() { ls "$1"/hunts/*/journal.jsonl 2>/dev/null | head -1; }
runs_once() { # WORK-DIR: the journal holds runs, none twice
  python3 - "$(journal_of "$1")" <<'PY'
import json, sys
runs = [json.loads(l)["run"] for l in open(sys.argv[1]) if '"event":"run"' in l.replace(" ", "")]
sys.exit(0 if runs and len(runs) == len(set(runs)) else 1)
PY
}
tps_seen() { # WORK-DIR: every tps the journal recorded, one a line
  python3 - "$(journal_of "$1")" <<'PY'
import json, sys
def walk(v):
    if isinstance(v, dict):
        for k, x in v.items():
            if k == "tps" and isinstance(x, (int, float)): print(x)
            else: walk(x)
    elif isinstance(v, list):
        for x in v: walk(x)
for l in open(sys.argv[1]): walk(json.loads(l))
PY
}

# Twelve pgbisects started at the same moment on one work dir.
w="$work/w-race"; rm -rf "$w" "$work"/race.*
for i in $(seq 1 12); do
  (cd "$repo" && "$bin" --good good --bad bad --profile "$slow" --work-dir "$w" >"$work/race.$i" 2>&1; echo $? >"$work/race.$i.rc") &
done
wait
ran=$(grep -lx 0 "$work"/race.*.rc | wc -l)
busy=$(grep -l "another pgbisect (pid" "$work"/race.? "$work"/race.?? | wc -l)
probe race "12 simultaneous starts: one ran ($ran), the others were refused as busy ($busy)" test "$ran" = 1 -a "$busy" = 11
probe race "12 simultaneous starts: the journal holds every run once" runs_once "$w"
flock "$w/lock" sleep 20 & holder=$!
sleep 0.5
hunt "$w" "$plain"
kill "$holder" 2>/dev/null; wait "$holder" 2>/dev/null
foreign_holder() { [ "$rc" = 2 ] && has "$out" "which is not a pgbisect" && has "$out" "(\`flock\`)" && ! has "$out" "another pgbisect"; }
probe race "a lock held by a process that is not pgbisect is named truthfully" foreign_holder

# Daemons a benchmark starts with setsid, one keeping its output open.
daemons=$(profile daemons "setsid sleep 613 & setsid sleep 614 >/dev/null 2>&1 </dev/null &")
hunt "$work/w-daemons" "$daemons" --max-runs 6
no_daemons() { runs_once "$work/w-daemons" && ! pgrep -fx 'sleep 61[34]' >/dev/null; }
probe stray "setsid daemons of every run are gone after the hunt (exit $rc)" no_daemons
pkill -fx 'sleep 61[34]' 2>/dev/null

# kill -9 while a benchmark runs; that benchmark, left running, prints
# tps = 1.0 later; the resumed hunt must not record it.
poison="$work/poison"
poisoned=$(profile poisoned "if [ -e $poison ]; then sleep 5.5; echo tps = 1.0; exit 0; fi;")
w="$work/w-poison"; rm -rf "$w"; touch "$poison"
(cd "$repo" && exec "$bin" --good good --bad bad --profile "$poisoned" --work-dir "$w" >/dev/null 2>&1) &
pid=$!
for _ in $(seq 1 100); do pgrep -fx 'sleep 5.5' >/dev/null && break; sleep 0.1; done
kill -9 "$pid"; wait "$pid" 2>/dev/null
rm -f "$poison"
left_before=$(pgrep -fx 'sleep 5.5' | wc -l)
hunt "$w" "$poisoned"
sleep 6
no_poison() { [ "$rc" = 0 ] && ! tps_seen "$w" | grep -qx '1.0\|1'; }
probe stray "kill -9 mid-run, resumed: no tps of the killed run's benchmark recorded" no_poison
probe stray "the resumed hunt stopped the benchmark the killed one left ($left_before running before)" test "$left_before" -ge 1 -a "$(pgrep -fx 'sleep 5.5' | wc -l)" = 0
probe stray "kill -9 mid-run, resumed: the right culprit" culprit_is_right "$w.json"

# Hard links planted at each file a hunt writes: their targets untouched.
w="$work/w-hard"; rm -rf "$w"; mkdir -p "$w/logs"
for c in $(git -C "$repo" rev-list bad); do
  echo precious > "$work/hard-log-$c"; ln "$work/hard-log-$c" "$w/logs/build-$c.log"
done
(cd "$repo" && exec "$bin" --good good --bad bad --profile "$slow" --work-dir "$w" --json "$w.json" >/dev/null 2>&1) &
pid=$!
for _ in $(seq 1 100); do ls -d "$w"/hunts/*/runs >/dev/null 2>&1 && break; sleep 0.1; done
echo precious > "$work/hard-run"
python3 - "$work/hard-run" "$(ls -d "$w"/hunts/*/runs | head -1)" $(git -C "$repo" rev-list bad | cut -c1-8) <<'PY'
import os, sys
target, runs, shorts = sys.argv[1], sys.argv[2], sys.argv[3:]
for n in range(1, 200):
    for s in shorts:
        try: os.link(target, f"{runs}/run-{n:05d}-{s}.txt")
        except OSError: pass
PY
wait "$pid"; rc=$?
hard_untouched() { for f in "$@"; do [ "$(cat "$f")" = precious ] || return 1; done; }
probe hardlink "hard links at every build log: targets untouched (exit $rc)" hard_untouched "$work"/hard-log-*
probe hardlink "hard links at every run file to come: target untouched" hard_untouched "$work/hard-run"
h=$(ls -d "$w"/hunts/* | head -1)
for f in result.json report.txt report.md chart.svg command.json; do
  echo precious > "$work/hard-$f"; rm -f "$h/$f"; ln "$work/hard-$f" "$h/$f"
done
hunt "$w" "$slow"
for f in result.json report.txt report.md chart.svg command.json; do
  probe hardlink "a hard link at $f: target untouched, the file rewritten" hard_untouched "$work/hard-$f"
done
echo precious > "$work/hard-journal"; cp "$h/journal.jsonl" "$work/journal.keep"
rm "$h/journal.jsonl" && ln "$work/hard-journal" "$h/journal.jsonl"
hunt "$w" "$slow"
journal_hard_refused() { [ "$rc" = 4 ] && has "$out" "has 2 names" && hard_untouched "$work/hard-journal"; }
probe hardlink "a journal with a hard link is refused, its target untouched" journal_hard_refused
rm "$h/journal.jsonl" && mv "$work/journal.keep" "$h/journal.jsonl"

# Output paths the user names that are links, and a linked compare/.
echo precious > "$work/out-target"
ln -sf "$work/out-target" "$work/out-link"
refused_link() { [ "$rc" != 0 ] && has "$out" "is a symbolic link" && [ "$(cat "$work/out-target")" = precious ]; }
out=$("$bin" report --work-dir "$w" --output "$work/out-link" 2>&1); rc=$?
probe outlink "report --output LINK is refused, its target untouched" refused_link
out=$("$bin" report --work-dir "$w" --chart "$work/out-link" 2>&1); rc=$?
probe outlink "report --chart LINK is refused, its target untouched" refused_link
out=$("$bin" report --work-dir "$w" --output /dev/null 2>&1); rc=$?
probe outlink "report --output to a device is refused" has "$out" "is not a plain file"
out=$(cd "$repo" && "$bin" compare good bad --profile "$plain" --work-dir "$work/w-cmp" --runs 2 --clients 1 --json "$work/out-link" 2>&1); rc=$?
probe outlink "compare --json LINK is refused, its target untouched" refused_link
out=$(cd "$repo" && "$bin" compare good bad --profile "$plain" --work-dir "$work/w-cmp" --runs 2 --clients 1 --chart "$work/out-link" 2>&1); rc=$?
probe outlink "compare --chart LINK is refused, its target untouched" refused_link
mkdir -p "$work/w-cmp" "$work/elsewhere"; rm -rf "$work/w-cmp/compare"; ln -s "$work/elsewhere" "$work/w-cmp/compare"
out=$(cd "$repo" && "$bin" compare good bad --profile "$plain" --work-dir "$work/w-cmp" --runs 2 --clients 1 2>&1); rc=$?
cmp_dir_refused() { [ "$rc" != 0 ] && has "$out" "is a symbolic link" && [ -z "$(ls -A "$work/elsewhere")" ]; }
probe outlink "a compare/ folder that is a link is refused, nothing written through it" cmp_dir_refused

# A benchmark printing 1 GiB, and one printing 5 MiB then its result.
flood=$(profile flood "yes xxxxxxxxxxxxxxxxxxxxxxx | head -c 1073741824;")
w="$work/w-flood"; rm -rf "$w"
(cd "$repo" && "$bin" --good good --bad bad --profile "$flood" --work-dir "$w" --max-runs 4 >"$work/flood.out" 2>&1) &
pid=$!; most=0
while kill -0 "$pid" 2>/dev/null; do
  size=$(du -sb "$w" 2>/dev/null | cut -f1); [ "${size:-0}" -gt "$most" ] && most=$size; sleep 0.05
done
wait "$pid"
probe cap "1 GiB of output: the work dir never held more than 8 MiB (at most $((most >> 10)) KiB)" test "$most" -lt $((8 << 20))
probe cap "1 GiB of output: the run was stopped, saying so" grep -q "printed more than 256 MiB and was stopped" "$work/flood.out" "$(journal_of "$w")"
chatty=$(profile chatty "yes xxxxxxxxxxxxxxxxxxxxxxx | head -c 5000000; echo;")
hunt "$work/w-chatty" "$chatty" --max-runs 4
chatty_kept() { [ "$(tps_seen "$work/w-chatty" | wc -l)" -ge 1 ] && grep -q "bytes of output cut by pgbisect" "$(ls "$work"/w-chatty/hunts/*/runs/* | head -1)"; }
probe cap "5 MB of output then tps: measured, the ends kept with a line saying what was cut" chatty_kept
if mkdir -p "$work/small" && mount -t tmpfs -o size=900k tmpfs "$work/small" 2>/dev/null; then
  hunt "$work/small/w" "$chatty" --max-runs 4
  full_named() { [ "$rc" != 0 ] && has "$out" "disk full: no space left to write $work/small/w"; }
  probe cap "a disk filled by a run's output says disk full, with the path" full_named
  umount "$work/small"
fi
# ---------------------------------------------------------------------
# PostgreSQL's paths and processes: real servers and pgbench on a tiny
# history whose builds install links to this machine's PostgreSQL 15
# binaries (a `make` first on PATH does it; PostgreSQL finds its share
# folder through the links). The folders handed to the server's user,
# links and hard links planted where it writes, levels swapped or opened,
# an install others may change, and a server and pgbench left by kill -9.
echo "PostgreSQL: folders handed to the server's user, processes left by a kill"
extra_kinds+=(pgpath pgstray)
kind_name[pgpath]="PostgreSQL folders: owner, mode, links"
kind_name[pgstray]="PostgreSQL processes left: stopped"
pg15=/usr/lib/postgresql/15/bin
if [ "$(id -u)" != 0 ] || [ ! -x "$pg15/postgres" ] || ! id postgres >/dev/null 2>&1; then
  echo "  skipped: needs root, a user postgres and PostgreSQL 15 in $pg15"
else
  pgtree="$work/pgtree"; pgmake="$work/pgmake"
  rm -rf "$pgtree" "$pgmake" && git init -q -b main "$pgtree" && mkdir -p "$pgtree/src/backend" "$pgmake"
  printf '#!/bin/sh\nexit 0\n' > "$pgtree/configure" && chmod +x "$pgtree/configure"
  echo 'all:' > "$pgtree/src/backend/Makefile"
  for i in 1 2 3; do echo "$i" > "$pgtree/n"; git -C "$pgtree" add -A; git -C "$pgtree" commit -q -m "pg $i"; done
  cat > "$pgmake/make" <<EOF
#!/bin/sh
for a in "\$@"; do case \$a in DESTDIR=*) d=\${a#DESTDIR=};; install) i=1;; esac; done
[ -n "\$i" ] || exit 0
p="\$d/opt/pgbisect/pgsql"; mkdir -p "\$p/bin" "\$p/lib" "\$p/share"
for b in postgres initdb pg_ctl psql pgbench; do ln -sf $pg15/\$b "\$p/bin/\$b"; done
ln -sf $pg15/../lib/plpgsql.so "\$p/lib/plpgsql.so"
ln -sf /usr/share/postgresql/15/postgres.bki "\$p/share/postgres.bki"
EOF
  chmod +x "$pgmake/make"
  pgprofile() { # NAME SECONDS: a select-only profile of SECONDS-long runs
    printf '[server.settings]\nfsync = "off"\n[benchmark]\nbuiltin = "select-only"\nclients = 1\nduration = %s\nscale = 1\nwarmup-runs = 0\n' "$2" > "$work/$1.toml"
    echo "$work/$1.toml"
  }
  tinypg=$(pgprofile tinypg 1)
  pghunt() { # WORK-DIR EXTRA...: a PostgreSQL hunt of at most 4 runs; sets $rc and $out
    local w=$1; shift
    out=$(cd "$pgtree" && PATH="$pgmake:$PATH" "$bin" --good HEAD~2 --bad HEAD --profile "$tinypg" --work-dir "$w" --max-runs 4 --no-why "$@" 2>&1)
    rc=$?
  }
  pg_done() { case $rc in 0|1|3) true;; *) false;; esac; }
  owner_mode() { stat -c '%U %a' "$1"; }
  pgw="$work/w3-pg"; rm -rf "$pgw"
  pghunt "$pgw"
  tpl=$(ls -d "$pgw"/templates/* 2>/dev/null | head -1)
  handed_right() {
    pg_done && [ -n "$tpl" ] && [ "$(owner_mode "$tpl")" = "root 755" ] \
      && [ "$(owner_mode "$tpl/data")" = "postgres 700" ] && [ "$(owner_mode "$pgw/data")" = "root 755" ] \
      && [ "$(owner_mode "$pgw/data/current")" = "postgres 700" ] && [ "$(owner_mode "$pgw/logs")" = "root 755" ] \
      && [ "$(stat -c %U "$tpl/initdb.log")" = root ] && [ "$(stat -c %U "$pgw/logs/server-00001.log")" = postgres ]
  }
  probe pgpath "a PostgreSQL hunt (exit $rc): only data dirs and server logs are the server user's, every folder above root's" handed_right
  echo precious > "$work/pg-precious"
  precious_kept() { [ "$(cat "$work/pg-precious")" = precious ] && [ "$(stat -c %U "$work/pg-precious")" = root ]; }
  for n in 1 2 3 4 5; do rm -f "$pgw/logs/server-0000$n.log"; ln -s "$work/pg-precious" "$pgw/logs/server-0000$n.log"; done
  pghunt "$pgw" --threshold 7
  probe pgpath "links planted at the server logs: refused, the target neither written nor given to postgres" eval 'refused 4 "symbolic link" && precious_kept'
  for n in 1 2 3 4 5; do rm -f "$pgw/logs/server-0000$n.log"; ln "$work/pg-precious" "$pgw/logs/server-0000$n.log"; done
  pghunt "$pgw" --threshold 8
  probe pgpath "hard links planted at the server logs: refused, the target untouched" eval 'refused 4 "names (hard links)" && precious_kept'
  rm -f "$pgw"/logs/server-*.log
  chown nobody "$tpl"
  pghunt "$pgw" --threshold 9
  probe pgpath "a template folder of another user is refused" refused 4 "belongs to another user"
  chown postgres "$tpl"
  pghunt "$pgw" --threshold 9
  remade() { pg_done && [ "$(owner_mode "$tpl")" = "root 755" ]; }
  probe pgpath "a template folder of the server's user (as made before) is made again, as root's (exit $rc)" remade
  chown nobody "$tpl/data"
  pghunt "$pgw" --threshold 11
  probe pgpath "a template data dir of a third user is refused" refused 4 "belongs to another user"
  chown -R postgres "$tpl/data"
  chown nobody "$pgw/data"
  pghunt "$pgw" --threshold 12
  probe pgpath "a data/ of another user is refused" refused 2 "data belongs to another user"
  chown root "$pgw/data"; chmod 777 "$pgw/data"
  pghunt "$pgw" --threshold 13
  probe pgpath "a data/ open to all is refused" refused 2 "writable by other users"
  chmod 755 "$pgw/data"
  inst=$(ls -d "$pgw"/installs/*/ | head -1)
  chmod 775 "$inst/bin"
  pghunt "$pgw" --threshold 14
  probe pgpath "an install whose bin/ its group may write is refused before its programs run" refused 2 "chmod go-w"
  chmod 755 "$inst/bin"; touch "$inst/share/planted"; chown nobody "$inst/share/planted"
  pghunt "$pgw" --threshold 15
  probe pgpath "a file of another user in an install is refused" refused 2 "planted belongs to another user"
  rm -f "$inst/share/planted"
  pghunt "$pgw" --threshold 16
  probe pgpath "all put back: the hunt runs (exit $rc)" pg_done

  # kill -9 while pgbench runs: the postmaster, its backends and pgbench
  # carry the run's token; the resumed hunt stops them all first.
  longpg=$(pgprofile longpg 60)
  w="$work/w3-pgkill"; rm -rf "$w"
  (cd "$pgtree" && PATH="$pgmake:$PATH" exec "$bin" --good HEAD~2 --bad HEAD --profile "$longpg" --work-dir "$w" --no-why >/dev/null 2>&1) &
  pid=$!
  marked_pids() { grep -lsxzF "$token" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3; }
  has_pgbench() { for p in $left; do grep -q pgbench "/proc/$p/cmdline" 2>/dev/null && return 0; done; return 1; }
  token="" left=""
  # The hunt builds both commits first: on a busy machine that alone can
  # take minutes, so wait for pgbench up to 15 minutes.
  deadline=$((SECONDS + 900))
  while [ "$SECONDS" -lt "$deadline" ] && kill -0 "$pid" 2>/dev/null; do
    pm=$(head -1 "$w/data/current/postmaster.pid" 2>/dev/null)
    token=$([ -n "$pm" ] && tr '\0' '\n' < "/proc/$pm/environ" 2>/dev/null | grep '^PGBISECT_RUN_TOKEN=')
    if [ -n "$token" ]; then left=$(marked_pids | tr '\n' ' '); has_pgbench && break; fi
    sleep 0.1
  done
  # What carried the token while pgbench ran is the evidence; by the time
  # the hunt is killed a run may have ended, so what is left is counted
  # again for the resumed hunt to stop.
  carried=0; [ -n "$token" ] && has_pgbench && carried=$(wc -w <<<"$left")
  kill -9 "$pid"; wait "$pid" 2>/dev/null
  left=$(marked_pids | tr '\n' ' ')
  probe pgstray "kill -9 during pgbench: the postmaster and pgbench carry the run's token ($carried processes while it ran, $(wc -w <<<"$left") after the kill)" eval '[ "$carried" -ge 2 ]'
  (cd "$pgtree" && PATH="$pgmake:$PATH" exec "$bin" --good HEAD~2 --bad HEAD --profile "$longpg" --work-dir "$w" --no-why >/dev/null 2>"$work/pgkill.err") &
  pid=$!
  for _ in $(seq 1 300); do grep -q "left behind" "$work/pgkill.err" && break; sleep 0.1; done
  still=$(for p in $left; do [ -e "/proc/$p" ] && ! grep -q ') Z ' "/proc/$p/stat" 2>/dev/null && echo "$p"; done | wc -l)
  kill -TERM "$pid"; wait "$pid" 2>/dev/null
  probe pgstray "the resumed hunt stopped them all before it started ($still left; it said: $(grep -o 'stopped [0-9]* server.*behind' "$work/pgkill.err"))" eval '[ -n "$left" ] && [ "$still" = 0 ] && grep -q "left behind" "$work/pgkill.err"'
  probe pgstray "nothing of either hunt left running after SIGTERM" eval '[ -z "$(marked_pids)" ] && ! pgrep -f "$w/data/current" >/dev/null'
fi
# ---------------------------------------------------------------------
# The hosts' remote commands: over ssh (sshd on this machine under
# several names) and on a Slurm node, as scripts/hosts-setup.sh makes
# them and .pgbisect-test-cache/hosts.env names them (scripts/test.sh
# exports it under CI). Daemons a benchmark starts on a host, output
# without end, and the host's folder: its levels, modes and links.
echo "hosts: daemons on the host, output capped while written, the host's folders"
extra_kinds+=(hoststray hostcap hostdir)
kind_name[hoststray]="hosts: daemons swept after each run"
kind_name[hostcap]="hosts: output capped while written"
kind_name[hostdir]="hosts: folder levels, modes, links"
watch_size() { # PID DIR: the largest file in DIR while PID ran, in bytes, into $most
  most=0
  while kill -0 "$1" 2>/dev/null; do
    size=$(find "$2" -type f -printf '%s\n' 2>/dev/null | sort -n | tail -1)
    [ "${size:-0}" -gt "$most" ] && most=$size; sleep 0.05
  done
}
host_hunt() { # WORK-DIR PROFILE HOSTS-SECTION EXTRA...: sets $rc and $out
  local w=$1 p=$2 section=$3; shift 3
  cp "$p" "$w.toml" && printf '%b' "$section" >> "$w.toml"
  hunt "$w" "$w.toml" --no-why "$@"
}
if [ -z "${PGBISECT_TEST_SSH_HOSTS:-}" ] || [ -z "${PGBISECT_TEST_SSH_CONFIG:-}" ]; then
  echo "  skipped: ssh probes (PGBISECT_TEST_SSH_HOSTS and PGBISECT_TEST_SSH_CONFIG unset; scripts/test.sh sets them under CI)"
else
  hosts_list=$(sed 's/[^,][^,]*/"&"/g' <<<"$PGBISECT_TEST_SSH_HOSTS")
  ssh_section() { echo "[hosts]\nssh = [$hosts_list]\ndir = \"$1\"\nssh-config = \"$PGBISECT_TEST_SSH_CONFIG\"\n"; }
  sshdaemons=$(profile sshdaemons "setsid sleep 623 & setsid sleep 624 >/dev/null 2>&1 </dev/null &")
  w="$work/w4-ssh-daemons"; rm -rf "$w" "$work/h4-daemons"
  host_hunt "$w" "$sshdaemons" "$(ssh_section "$work/h4-daemons")"
  probe hoststray "ssh: setsid daemons of every run are gone from the hosts after the hunt (exit $rc)" eval '[ "$rc" = 0 ] && culprit_is_right "$w.json" && ! pgrep -fx "sleep 62[34]" >/dev/null'
  pkill -fx 'sleep 62[34]' 2>/dev/null
  sshflood=$(profile sshflood "yes xxxxxxxxxxxxxxxxxxxxxxx | head -c 1073741824;")
  w="$work/w4-ssh-flood"; rm -rf "$w" "$work/h4-flood"
  cp "$sshflood" "$w.toml" && printf '%b' "$(ssh_section "$work/h4-flood")" >> "$w.toml"
  (cd "$repo" && "$bin" --good good --bad bad --profile "$w.toml" --work-dir "$w" --max-runs 4 --no-why >"$work/ssh-flood.out" 2>&1) &
  watch_size $! "$w"; wait
  probe hostcap "ssh: 1 GiB of output: no file of the work dir ever held more than 2 MiB (at most $((most >> 10)) KiB)" test "$most" -lt $((2 << 20))
  probe hostcap "ssh: 1 GiB of output: the run was stopped on its host, saying so" grep -q "printed more than 256 MiB on" "$work/ssh-flood.out" "$(journal_of "$w")"
  hd="$work/h4-dirs"; rm -rf "$hd"; mkdir -p "$hd"
  w="$work/w4-ssh-open"; rm -rf "$w"; chmod 777 "$hd"
  host_hunt "$w" "$plain" "$(ssh_section "$hd/hosts")"
  probe hostdir "ssh: a host folder inside a folder open to all is refused before any run" eval '[ "$rc" != 0 ] && has "$out" "h4-dirs is writable by other users" && [ ! -e "$hd/hosts" ]'
  chmod 755 "$hd"
  w="$work/w4-ssh-ok"; rm -rf "$w"
  host_hunt "$w" "$plain" "$(ssh_section "$hd/hosts")"
  probe hostdir "ssh: the same folder closed: the hunt runs on the hosts (exit $rc)" eval '[ "$rc" = 0 ] && culprit_is_right "$w.json"'
  first_host=${PGBISECT_TEST_SSH_HOSTS%%,*}
  rm -rf "$hd/hosts/$first_host/pids" "$work/h4-elsewhere"; mkdir -p "$work/h4-elsewhere"
  ln -s "$work/h4-elsewhere" "$hd/hosts/$first_host/pids"
  w="$work/w4-ssh-link"; rm -rf "$w"
  host_hunt "$w" "$plain" "$(ssh_section "$hd/hosts")"
  probe hostdir "ssh: a host's pids/ that is a link is refused, nothing written through it" eval '[ "$rc" != 0 ] && has "$out" "pids is a symbolic link" && [ -z "$(ls -A "$work/h4-elsewhere")" ]'
  rm -f "$hd/hosts/$first_host/pids"; mkdir -m 755 "$hd/hosts/$first_host/pids"
  chown nobody "$hd/hosts/$first_host/installs"
  w="$work/w4-ssh-foreign"; rm -rf "$w"
  host_hunt "$w" "$plain" "$(ssh_section "$hd/hosts")"
  probe hostdir "ssh: a host's installs/ of another user is refused" eval '[ "$rc" != 0 ] && has "$out" "installs belongs to another user"'
  chown root "$hd/hosts/$first_host/installs"
fi
if [ -z "${PGBISECT_TEST_SLURM_NODE:-}" ] || [ -z "${PGBISECT_TEST_SLURM_PARTITION:-}" ]; then
  echo "  skipped: Slurm probes (PGBISECT_TEST_SLURM_NODE and PGBISECT_TEST_SLURM_PARTITION unset; scripts/test.sh sets them under CI)"
else
  slurm_section="[hosts]\nnodes = [\"$PGBISECT_TEST_SLURM_NODE\"]\npartition = \"$PGBISECT_TEST_SLURM_PARTITION\"\n"
  slurmdaemons=$(profile slurmdaemons "setsid sleep 633 & setsid sleep 634 >/dev/null 2>&1 </dev/null &")
  w="$work/w4-slurm-daemons"; rm -rf "$w"
  host_hunt "$w" "$slurmdaemons" "$slurm_section" --max-runs 6
  probe hoststray "Slurm: setsid daemons of every run are gone from the node after the hunt (exit $rc)" eval 'runs_once "$w" && ! pgrep -fx "sleep 63[34]" >/dev/null'
  pkill -fx 'sleep 63[34]' 2>/dev/null
  slurmflood=$(profile slurmflood "yes xxxxxxxxxxxxxxxxxxxxxxx | head -c 1073741824;")
  w="$work/w4-slurm-flood"; rm -rf "$w"
  cp "$slurmflood" "$w.toml" && printf '%b' "$slurm_section" >> "$w.toml"
  (cd "$repo" && "$bin" --good good --bad bad --profile "$w.toml" --work-dir "$w" --max-runs 4 --no-why >"$work/slurm-flood.out" 2>&1) &
  watch_size $! "$w"; wait
  probe hostcap "Slurm: 1 GiB of output: no file of the work dir ever held more than 2 MiB (at most $((most >> 10)) KiB)" test "$most" -lt $((2 << 20))
  probe hostcap "Slurm: 1 GiB of output: the run was stopped on its node, saying so" grep -q "printed more than 256 MiB on" "$work/slurm-flood.out" "$(journal_of "$w")"
  slurmchatty=$(profile slurmchatty "yes xxxxxxxxxxxxxxxxxxxxxxx | head -c 5000000; echo;")
  w="$work/w4-slurm-chatty"; rm -rf "$w"
  host_hunt "$w" "$slurmchatty" "$slurm_section" --max-runs 4
  probe hostcap "Slurm: 5 MB of output then tps: measured, the ends kept with a line saying what was cut" eval '[ "$(tps_seen "$w" | wc -l)" -ge 1 ] && grep -q "bytes of output cut by pgbisect" "$(ls "$w"/hunts/*/runs/* | head -1)"'
fi
# ---------------------------------------------------------------------
# Probes kept in files of their own, one topic a file, with the helpers
# above (probe, hunt, refused, has, profile ...) in scope.
for part in "$here"/scripts/reliability.d/*.sh; do
  [ -e "$part" ] || continue
  # shellcheck source=/dev/null
  . "$part"
done
echo
printf '%-46s %s\n' "probe" "held / tried"
for kind in input kill hang link "${extra_kinds[@]}"; do
  case $kind in
    input) name="bad inputs: clear error, right exit code";;
    kill) name="kill -9 at random points: exact resume";;
    hang) name="hangs injected: clean stop";;
    link) name="links and permissions: held";;
    *) name=${kind_name[$kind]};;
  esac
  printf '%-46s %s / %s\n' "$name" "${ok[$kind]:-0}" "${tried[$kind]:-0}"
done
echo "$held passed, $failed failed"
[ "$failed" = 0 ]
