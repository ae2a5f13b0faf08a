# Sourced by scripts/reliability.sh: a value a flag and a profile can both
# give is the flag's, else (for judge) the hunt's, else the profile's, in
# every command; and a results store made by the migrations pgbisect wrote
# by hand up to schema version 4 still opens and migrates.
echo "flags over the profile: clients and threshold; an old store migrated"
extra_kinds+=(pflags)
kind_name[pflags]="flags over profiles; old stores migrated"

pf="$work/pf"; rm -rf "$pf"; mkdir -p "$pf"
listing=$(profile pf-listing "")
printf 'clients = [2, 3]\n[hunt]\nthreshold = 40\n' >> "$listing"
# Prints the client counts and verdicts of the compare result FILE.
pf_rows() { python3 -c 'import json,sys; print(" ".join("%s:%s" % (r["clients"], r["comparison"]["verdict"]) for r in json.load(open(sys.argv[1]))["rows"]))' "$1"; }
pf_compare() { # NAME FLAGS...: compare good bad with the listing profile, sets $rc, $out, $rows
  local name=$1; shift
  out=$(cd "$repo" && "$bin" compare good bad --profile "$listing" --work-dir "$pf/w-cmp" --runs 5 \
    --json "$pf/$name.json" "$@" 2>&1); rc=$?
  rows=$(pf_rows "$pf/$name.json" 2>/dev/null)
}

# compare: the profile's clients and threshold (a 20% drop under its 40%
# is not SLOWER), unless the flags say otherwise.
pf_compare profile
probe pflags "compare without --clients: the profile's clients [2, 3] and threshold 40% ($rows)" \
  eval '[ "$rc" = 0 ] && [ "$rows" = "2:unchanged 3:unchanged" ]'
pf_compare flags --clients 5 --threshold 5
probe pflags "compare --clients 5 --threshold 5 over the profile: one row, SLOWER ($rows)" \
  eval '[ "$rc" = 0 ] && [ "$rows" = "5:regressed" ]'
pf_compare zero --clients 1,0
probe pflags "compare --clients 1,0 over the profile: refused (exit 2)" refused 2 "at least 1"

# A hunt decides on one count: the listing profile needs --clients; judge
# takes the hunt's count before the profile's list.
w="$pf/w-hunt"; hunt "$w" "$listing"
probe pflags "hunt with a profile listing clients, without --clients: refused (exit 2)" \
  eval 'refused 2 "give --clients N" && [ ! -e "$w/hunts" ]'
hunt "$w" "$listing" --clients 3 --threshold 5
if [ "$rc" = 0 ]; then
  out=$(cd "$repo" && "$bin" judge bad --work-dir "$w" 2>&1); rc=$?
  probe pflags "judge without --clients: the hunt's 3, not the profile's list (exit $rc)" \
    eval '[ "$rc" = 1 ] && has "$out" "bad-like"'
else
  probe pflags "a hunt at --clients 3 to judge against (exit $rc)" false
fi

# watch: a series at each of the profile's counts.
ww="$pf/w-watch"
out=$(cd "$repo" && "$bin" watch --branch main --profile "$listing" --work-dir "$ww" --per-night 1 \
  --backfill 0 --rounds 1 2>&1); rc=$?
pf_clients=$(python3 -c 'import sqlite3,sys; print(" ".join(str(c) for (c,) in sqlite3.connect(sys.argv[1]).execute("SELECT DISTINCT clients FROM runs ORDER BY clients")))' "$ww/watch.sqlite" 2>/dev/null)
probe pflags "watch without --clients: a series at each of the profile's counts ($pf_clients)" \
  eval '[ "$pf_clients" = "2 3" ]'

# A store made at each version by the old hand-written SQLite migrations
# (tests/fixtures/store/sqlite-v4.sql), with a night in it: the watcher
# opens it, migrates it to the version it writes and reads the night.
pf_old_store() { # VERSION FILE: FILE made by the old migrations up to VERSION
  python3 - "$here/tests/fixtures/store/sqlite-v4.sql" "$1" "$2" <<'EOF'
import re, sqlite3, sys
text, version, path = open(sys.argv[1]).read(), int(sys.argv[2]), sys.argv[3]
parts = re.split(r"^-- version \d+$", text, flags=re.M)[1:]
db = sqlite3.connect(path)
for part in parts[:version]:
    db.executescript(part)
db.executescript("CREATE TABLE schema_version (version INTEGER NOT NULL);"
                 f"INSERT INTO schema_version VALUES ({version});"
                 "INSERT INTO nights (id, clock, branch, tip, status, reference)"
                 " VALUES (1, 86400, 'main', 'a', 'done', 'ref');")
db.commit()
EOF
}
for version in 1 2 3 4; do
  wo="$pf/w-old$version"; mkdir -p "$wo"
  pf_old_store "$version" "$wo/watch.sqlite"
  out=$("$bin" watch export --work-dir "$wo" --branch main --csv "$pf/old$version.csv" 2>&1); rc=$?
  now=$(python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute("SELECT version FROM schema_version").fetchone()[0])' "$wo/watch.sqlite" 2>/dev/null)
  probe pflags "a store made by the old migrations at version $version: opened, at version $now" \
    eval '[ "$rc" = 0 ] && [ "$now" = 5 ]'
done
