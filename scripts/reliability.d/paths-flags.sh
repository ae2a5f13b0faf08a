# Sourced by scripts/reliability.sh: every path pgbisect writes checked at
# every level, every flag value checked before anything runs, journals
# with values no run gives, and the scripts' own output folders.
echo "paths and flags: output folders, flag values, journal values, scripts"
extra_kinds+=(outdir flagval jvalue scriptdir)
kind_name[outdir]="outputs through a folder link: refused"
kind_name[flagval]="flag values: refused before the night"
kind_name[jvalue]="journal values no run gives: refused"
kind_name[scriptdir]="scripts: no write through planted links"

# A folder link planted on the way to each output: refused, nothing
# written where it points, and (for a hunt) nothing run.
p5="$work/p5"; rm -rf "$p5"; mkdir -p "$p5/elsewhere"
ln -s "$p5/elsewhere" "$p5/out"
through_refused() { # [CODE]: exited CODE (2), nothing written where the link points
  [ "$rc" = "${1:-2}" ] && has "$out" "is a symbolic link" && [ -z "$(ls -A "$p5/elsewhere")" ]
}
w="$p5/w-hunt"
out=$(cd "$repo" && "$bin" --good good --bad bad --profile "$plain" --work-dir "$w" --json "$p5/out/r.json" 2>&1); rc=$?
probe outdir "hunt --json DIRLINK/r.json: refused before any build" eval 'through_refused && [ ! -e "$w/hunts" ]'
for flag in --json --chart; do
  out=$(cd "$repo" && "$bin" compare good bad --profile "$plain" --work-dir "$p5/w-cmp" --runs 2 --clients 1 "$flag" "$p5/out/c" 2>&1); rc=$?
  probe outdir "compare $flag DIRLINK/c: refused before any run" eval 'through_refused && [ ! -e "$p5/w-cmp/compare" ]'
done
w="$p5/w-done"; hunt "$w" "$plain"
for flag in --output --chart; do
  out=$("$bin" report --work-dir "$w" "$flag" "$p5/out/report" 2>&1); rc=$?
  probe outdir "report $flag DIRLINK/report: refused" through_refused
done
out=$(cd "$repo" && "$bin" judge bad --work-dir "$w" --profile "$plain" --json "$p5/out/j.json" 2>&1); rc=$?
probe outdir "judge --json DIRLINK/j.json: refused (128, stopping git bisect)" through_refused 128
out=$("$bin" simulate --trials 1 --json "$p5/out/s.json" 2>&1); rc=$?
probe outdir "simulate --json DIRLINK/s.json: refused" through_refused

# The watcher: a night over the repository's main branch, then its site
# and its CSV through the planted link.
ww="$p5/w-watch"
watch_night() { (cd "$repo" && "$bin" watch --branch main --profile "$plain" --work-dir "$ww" --per-night 1 --backfill 0 --rounds 1 "$@" 2>&1); }
out=$(watch_night --html "$p5/out/site"); rc=$?
probe outdir "watch --html DIRLINK/site: refused before the night" eval 'through_refused && [ ! -e "$ww/watch.sqlite" ]'
: > "$p5/site-file"
out=$(watch_night --html "$p5/site-file"); rc=$?
html_file() { [ "$rc" = 2 ] && has "$out" "is a file, not a folder" && ! has "$out" "work-dir" && [ ! -e "$ww/watch.sqlite" ] && [ ! -s "$p5/site-file" ]; }
probe outdir "watch --html FILE: refused before anything is measured, without a --work-dir hint" html_file
out=$(watch_night); rc=$?
if [ -e "$ww/watch.sqlite" ]; then
  out=$("$bin" watch publish --work-dir "$ww" --branch main --html "$p5/out/site" 2>&1); rc=$?
  probe outdir "watch publish --html DIRLINK/site: refused" through_refused
  out=$("$bin" watch export --work-dir "$ww" --branch main --csv "$p5/out/w.csv" 2>&1); rc=$?
  probe outdir "watch export --csv DIRLINK/w.csv: refused" through_refused
else
  probe outdir "a night of watch to publish and export from (exit $rc)" false
fi
out=$(watch_night --store "sqlite:$p5/out/s.db"); rc=$?
probe outdir "watch --store sqlite:DIRLINK/s.db: refused before the night" through_refused

# Flag values no night can use: exit 2 at once, saying what to give, no
# work dir made.
bad_value() { # WANT FLAGS...
  local want=$1; shift
  local wb="$p5/w-badflag"; rm -rf "$wb"
  out=$(cd "$repo" && "$bin" watch --profile "$plain" --work-dir "$wb" "$@" 2>&1); rc=$?
  [ "$rc" = 2 ] && has "$out" "$want" && [ ! -e "$wb" ]
}
probe flagval "--commit-url javascript:...: refused" bad_value "http:// or https://" --html "$p5/site" --commit-url 'javascript:alert(1)//{sha}'
probe flagval "--commit-url without {sha}: refused" bad_value "no {sha}" --html "$p5/site" --commit-url 'https://example.org/c'
probe flagval "--replay 2024-02-30..2024-03-01: refused" bad_value "give two dates" --replay 2024-02-30..2024-03-01
probe flagval "--every 0: refused" bad_value "at least 1" --replay 2024-02-01..2024-03-01 --every 0
probe flagval "--max-rounds 0: refused" bad_value "at least 1" --max-rounds 0
probe flagval "--per-night 0: refused" bad_value "at least 1" --per-night 0
probe flagval "--clients 1,0: refused" bad_value "at least 1" --clients 1,0
probe flagval "--deadline 25:00: refused" bad_value "25:00" --deadline 25:00
probe flagval "--time-budget 0h: refused" bad_value "not a duration" --time-budget 0h
probe flagval "--branch with a control byte: refused" bad_value "control character" --branch "$(printf 'main\033[2J')"

sim_refused() { # WANT FLAGS...: simulate refuses before it simulates anything
  local want=$1; shift
  out=$(timeout 60 "$bin" simulate "$@" 2>&1); rc=$?
  [ "$rc" = 2 ] && has "$out" "$want" && ! has "$out" "scenario "
}
probe flagval "simulate --commits 2 with 2 steps (used to loop forever): refused" sim_refused "give at least 3" --commits 2 --steps -10,-20
probe flagval "simulate --unbuildable 150 (used to panic): refused" sim_refused "from 0 to below 100" --unbuildable 150
probe flagval "simulate --run-length 0s (used to panic): refused" sim_refused "above zero" --run-length 0s

# A journal holding a run of 1e308 tps, or of -5, before its last line; a
# last line that parses but conflicts: each refused with its line number,
# the file as it was.
w="$p5/w-journal"; hunt "$w" "$plain"
journal=$(ls "$w"/hunts/*/journal.jsonl 2>/dev/null | head -1)
cp "$journal" "$p5/journal.keep" 2>/dev/null
set_tps() { # TPS: the first run's tps set to TPS
  python3 - "$journal" "$1" <<'PY'
import json, sys
path, tps = sys.argv[1], float(sys.argv[2])
lines = open(path).read().splitlines()
for i, l in enumerate(lines):
    e = json.loads(l)
    if e.get("event") == "run" and "Measured" in e["outcome"]:
        e["outcome"]["Measured"]["tps"] = tps
        lines[i] = json.dumps(e)
        break
open(path, "w").write("".join(l + "\n" for l in lines))
PY
}
journal_value_refused() { # TEXT
  local before; before=$(md5sum < "$journal")
  hunt "$w" "$plain"
  [ "$rc" != 0 ] && has "$out" "of the journal" && has "$out" "is damaged" && has "$out" "$1" \
    && [ "$(md5sum < "$journal")" = "$before" ]
}
if [ -n "$journal" ]; then
  set_tps 1e308
  probe jvalue "a run of 1e308 tps in the journal: refused with its line" journal_value_refused "tps 1e308"
  cp "$p5/journal.keep" "$journal"; set_tps -5
  probe jvalue "a run of -5 tps in the journal: refused with its line" journal_value_refused "tps -5"
  cp "$p5/journal.keep" "$journal"
  python3 - "$journal" <<'PY'
import json, sys
path = sys.argv[1]
lines = open(path).read().splitlines()
run = next(json.loads(l) for l in lines if json.loads(l).get("event") == "run")
run["commit"] = "0" * 40
lines.append(json.dumps(run))
open(path, "w").write("".join(l + "\n" for l in lines))
PY
  probe jvalue "a whole last line that conflicts: refused, not cut as torn" journal_value_refused "twice"
  cp "$p5/journal.keep" "$journal"
else
  probe jvalue "a finished hunt with a journal to damage (exit $rc)" false
fi

# regressions.sh run as root, its default folder made first by another
# user with links to a root file planted where its outputs go: refused at
# once, the file untouched.
if [ "$(id -u)" = 0 ]; then
  planted() { [ "$rc" = 2 ] && has "$out" "belongs to another user" && [ "$(cat "$p5/root-file")" = precious ]; }
  echo precious > "$p5/root-file"; chmod 644 "$p5/root-file"
  other=pgbprobe
  id "$other" >/dev/null 2>&1 || useradd -M -r -s /usr/sbin/nologin "$other"
  old=/var/tmp/pgbisect-regressions
  if [ -e "$old" ] && [ "$(stat -c %U "$old")" != "$other" ]; then
    echo "  skipped: $old exists (a real one of this machine's regressions runs)"
  else
    rm -rf "$old"
    runuser -u "$other" -- mkdir -m 777 "$old"
    for f in x-case-seed1.txt x-case-seed1.log x-case-seed1.json; do
      runuser -u "$other" -- ln -s "$p5/root-file" "$old/$f"
    done
    out=$(PGBISECT=/bin/true "$here/scripts/regressions.sh" 2>&1); rc=$?
    probe scriptdir "regressions.sh: its default folder made by another user is refused, the root file untouched" planted
    out=$(PGBISECT=/bin/true "$here/scripts/regressions.sh" --work "$old/" x 2>&1); rc=$?
    probe scriptdir "regressions.sh --work THAT-FOLDER: refused too" planted
    rm -rf "$old"
  fi
  rm -rf "$p5/s-open" && mkdir -m 1777 "$p5/s-open"
  runuser -u "$other" -- mkdir -m 777 "$p5/s-open/e2e"
  runuser -u "$other" -- ln -s "$p5/root-file" "$p5/s-open/e2e/history.txt"
  out=$("$here/scripts/e2e.sh" "$p5/s-open/e2e" 2>&1); rc=$?
  probe scriptdir "e2e.sh in a folder another user made: refused before setup, the root file untouched" planted
else
  echo "  skipped: scripts' folders of another user (needs root)"
fi
