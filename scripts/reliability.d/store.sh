# Probes of the watcher's store (sourced by scripts/reliability.sh, its
# helpers in scope): nothing read from a store names where root writes; a
# store another user could have planted or could change is refused; a
# report link planted in the work dir is not published; one watcher per
# store; a signal stops a long replay. Self-contained: its own dated
# history (st-repo), work dirs and stores (st-*), all under $work.
echo "the watcher's store: planted paths and files, one watcher, signals"
extra_kinds+=(store)
kind_name[store]="watch store: planted paths, files, one watcher"

# Fourteen commits a day apart from 2024-01-01; the level drops 20% on
# the 9th: a replay confirms the drop, hunts it and writes its report.
st_repo="$work/st-repo"
rm -rf "$st_repo" && git init -q -b main "$st_repo"
for i in $(seq 1 14); do
  day=$(printf '2024-01-%02dT12:00:00Z' "$i")
  if [ "$i" -ge 9 ]; then echo 800 > "$st_repo/level"; else echo 1000 > "$st_repo/level"; fi
  echo "$i" > "$st_repo/n"
  git -C "$st_repo" add -A
  GIT_AUTHOR_DATE=$day GIT_COMMITTER_DATE=$day git -C "$st_repo" commit -q -m "commit $i"
done
st_watch() { # WORK-DIR RANGE EXTRA...: a replay, sets $rc and $out
  local w=$1 range=$2; shift 2
  out=$("$bin" watch --repo "$st_repo" --work-dir "$w" --profile "$plain" --clients 8 \
    --replay "$range" --backfill 0 "$@" 2>&1)
  rc=$?
}
# Runs python3's sqlite3 on the store FILE with the statement SQL.
st_sql() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute(sys.argv[2]); c.commit()' "$1" "$2"; }
other=nobody

# A store of a replay that hunted its change.
st_w="$work/st-w"
rm -rf "$st_w"
st_watch "$st_w" 2024-01-01..2024-01-14
st_hunted() { [ "$rc" = 0 ] && ls "$st_w"/watch-hunts/change-*/report.txt >/dev/null 2>&1; }
probe store "a replay hunts its change in the work dir (exit $rc)" st_hunted

# 1. The store names another folder for the hunt and asks it hunted again.
planted="$work/st-planted-etc/x"
rm -rf "$work/st-planted-etc" "$st_w"/watch-hunts
st_sql "$st_w/watch.sqlite" "UPDATE changes SET hunt_dir='$planted', report='$planted/report.txt', hunt_outcome=NULL, mailed=NULL WHERE hunt_dir IS NOT NULL"
st_watch "$st_w" 2024-01-01..2024-01-14
st_not_planted() { [ ! -e "$planted" ] && ls "$st_w"/watch-hunts/change-*/journal.jsonl >/dev/null 2>&1; }
probe store "a hunt_dir planted in the store is not written; the hunt goes to the work dir" st_not_planted

# 2. A store planted (by another user) in a work dir of mode 1777.
sticky="$work/st-sticky"
rm -rf "$sticky" && mkdir -p "$sticky" && cp "$st_w/watch.sqlite" "$sticky/watch.sqlite"
chmod 1777 "$sticky"
[ "$(id -u)" = 0 ] && chown "$other" "$sticky/watch.sqlite"
st_watch "$sticky" 2024-01-01..2024-01-14
st_sticky_refused() { [ "$rc" = 2 ] && has "$out" "every user may add files" && [ ! -e "$sticky/watch-hunts" ]; }
probe store "a work dir of mode 1777 (a store planted in it) is refused (exit $rc)" st_sticky_refused

# 3. A store file others may write, or another user's.
open_store="$work/st-open/watch.sqlite"
rm -rf "$work/st-open" && mkdir -p "$work/st-open" && cp "$st_w/watch.sqlite" "$open_store"
chmod 666 "$open_store"
st_watch "$work/st-open-w" 2024-01-01..2024-01-14 --store "sqlite:$open_store"
st_open_refused() { [ "$rc" = 2 ] && has "$out" "writable by other users" && [ ! -e "$work/st-open-w/watch-hunts" ]; }
probe store "a store file of mode 0666 is refused (exit $rc)" st_open_refused
if [ "$(id -u)" = 0 ]; then
  chmod 644 "$open_store" && chown "$other" "$open_store"
  st_watch "$work/st-open-w" 2024-01-01..2024-01-14 --store "sqlite:$open_store"
  st_foreign_refused() { [ "$rc" = 2 ] && has "$out" "belongs to another user"; }
  probe store "a store file of another user is refused (exit $rc)" st_foreign_refused
fi

# 4. A link given (or planted) as the store: not followed, its target
# neither made nor read.
target="$work/st-link-target.sqlite"
rm -f "$target" "$work/st-link.sqlite" && ln -s "$target" "$work/st-link.sqlite"
st_watch "$work/st-link-w" 2024-01-01..2024-01-14 --store "sqlite:$work/st-link.sqlite"
st_link_refused() { [ "$rc" = 2 ] && has "$out" "symbolic link" && [ ! -e "$target" ]; }
probe store "a link as the store is refused, its target not made (exit $rc)" st_link_refused

# 5. A hot rollback journal planted beside the store, which SQLite would
# play back into it at the next open.
cp "$st_w/watch.sqlite" "$work/st-journal.sqlite"
journal="$work/st-journal-w/watch.sqlite-journal"
mkdir -p "$work/st-journal-w" && cp "$st_w/watch.sqlite" "$work/st-journal-w/watch.sqlite"
printf 'planted' > "$journal"
if [ "$(id -u)" = 0 ]; then chown "$other" "$journal"; else chmod 666 "$journal"; fi
before=$(sha256sum < "$work/st-journal-w/watch.sqlite")
st_watch "$work/st-journal-w" 2024-01-01..2024-01-14
st_journal_refused() { [ "$rc" = 2 ] && has "$out" "watch.sqlite-journal" && [ "$(sha256sum < "$work/st-journal-w/watch.sqlite")" = "$before" ]; }
probe store "a -journal planted beside the store is refused, the store untouched (exit $rc)" st_journal_refused

# 6. A link planted as a hunt's report is not copied into the site.
secret="$work/st-secret"
echo "root's secret $RANDOM" > "$secret" && chmod 600 "$secret"
report=$(ls "$st_w"/watch-hunts/change-*/report.txt | head -1)
rm -f "$report" && ln -s "$secret" "$report"
rm -rf "$work/st-site"
out=$("$bin" watch publish --repo "$st_repo" --work-dir "$st_w" --html "$work/st-site" 2>&1); rc=$?
st_not_published() { ! grep -rqs "root's secret" "$work/st-site" && has "$out" "symbolic link"; }
probe store "a report link planted in the work dir is not published (exit $rc)" st_not_published

# 7. Two watchers (two work dirs) on one store: the second is refused.
shared="$work/st-shared/watch.sqlite"
rm -rf "$work/st-shared" "$work"/st-two-*
mkdir -p "$work/st-shared"
"$bin" watch --repo "$st_repo" --work-dir "$work/st-two-a" --profile "$slow" --clients 8 \
  --replay 2024-01-01..2024-01-14 --backfill 0 --store "sqlite:$shared" >/dev/null 2>&1 &
first=$!
for _ in $(seq 1 50); do [ -s "$shared" ] && break; sleep 0.1; done
sleep 0.5
st_watch "$work/st-two-b" 2024-01-01..2024-01-14 --store "sqlite:$shared"
kill -0 "$first" 2>/dev/null; first_alive=$?
wait "$first"; first_rc=$?
st_second_refused() { [ "$first_alive" = 0 ] && [ "$rc" = 2 ] && has "$out" "in use by another watcher" && [ "$first_rc" = 0 ]; }
probe store "a second watcher on one store is refused while the first runs (exit $rc; first $first_rc)" st_second_refused

# 8. SIGTERM in a replay of thousands of idle nights: stops within seconds,
# exit 4 as an interrupted hunt.
rm -rf "$work/st-term"
"$bin" watch --repo "$st_repo" --work-dir "$work/st-term" --profile "$plain" --clients 8 \
  --replay 2024-01-01..2060-12-31 --backfill 0 >"$work/st-term.out" 2>&1 &
term=$!
# Past the nights with commits (their change hunted): into the idle ones.
st_nights() { python3 -c 'import sqlite3,sys; print(sqlite3.connect(sys.argv[1], timeout=10).execute("SELECT count(*) FROM nights").fetchone()[0])' "$1" 2>/dev/null || echo 0; }
for _ in $(seq 1 600); do
  [ "$(st_nights "$work/st-term/watch.sqlite")" -ge 100 ] && break
  sleep 0.1
done
start=$(date +%s%N)
kill -TERM "$term"
wait "$term"; term_rc=$?
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
idle=$(st_nights "$work/st-term/watch.sqlite")
st_stopped() { [ "$term_rc" = 4 ] && [ "$took_ms" -le 5000 ] && [ "$idle" -ge 100 ] && [ "$idle" -lt 13000 ] && has "$(cat "$work/st-term.out")" "interrupted"; }
probe store "SIGTERM in a replay of 37 years, $idle nights in, stops it in $took_ms ms with exit $term_rc" st_stopped
