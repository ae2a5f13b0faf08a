# What the watcher writes and prints, now rendered in report/watch: the
# replay of a made history whose every commit subject carries HTML and
# terminal escapes, with a link planted at each file a digest could be
# kept in. The digest replaces a link and never writes through it; the
# night's text names each hunt's report where it is; commit text reaches
# the digests, the terminal and the site only escaped.
# Sourced by scripts/reliability.sh, its helpers in scope.
extra_kinds+=(watchout)
kind_name[watchout]="watcher's output: links, report paths, escapes"

# 30 commits a day apart in January 2024; the level drops 20% at 16.
wrepo="$work/wo-repo"; rm -rf "$wrepo" && git init -q -b main "$wrepo"
for i in $(seq 0 29); do
  if [ "$i" -ge 16 ]; then echo 800 > "$wrepo/level"; else echo 1000 > "$wrepo/level"; fi
  echo "$i" > "$wrepo/n"
  day=$(printf '2024-01-%02dT12:00:00Z' $((i + 1)))
  git -C "$wrepo" add -A
  GIT_AUTHOR_DATE=$day GIT_COMMITTER_DATE=$day git -C "$wrepo" commit -q --cleanup=verbatim \
    -m "commit $i <script>alert($i)</script> $(printf '\033[2J\033]0;owned\007')planner$(printf '\r')done"
done

w="$work/w-wo"; site="$work/wo-site"; victim="$work/wo-victim"
rm -rf "$w" "$site" && mkdir -p "$w/digests" && echo untouched > "$victim"
for d in $(seq 1 31); do ln -s "$victim" "$w/digests/$(printf '2024-01-%02d' "$d").txt"; done
out=$("$bin" watch --repo "$wrepo" --work-dir "$w" --profile "$plain" --clients 8 \
  --replay 2024-01-01..2024-01-30 --every 3 --per-night 1 --backfill 0 --digest-every 7 \
  --html "$site" 2>"$work/wo-err")
rc=$?

digests_kept() { # every digest a plain file under its subject; the victim as it was
  local n=0 f
  for f in "$w"/digests/*.txt; do
    [ -L "$f" ] && continue
    [ -f "$f" ] && head -1 "$f" | grep -q '^Subject: pgbisect watch digest: main ' || return 1
    n=$((n + 1))
  done
  [ "$n" -ge 3 ] && [ "$(cat "$victim")" = untouched ]
}
probe watchout "links planted at the digests' files are replaced, not written through (exit $rc)" \
  digests_kept

reports_named() { # each "report: PATH" line of the night's text names a file there
  local paths; paths=$(sed -n 's/^    report: //p' <<<"$out")
  [ -n "$paths" ] || return 1
  while IFS= read -r p; do [ -f "$p" ] && [ "$(basename "$p")" = report.txt ] || return 1; done <<<"$paths"
}
probe watchout "the night's text names each hunt's report.txt, and it is there" reports_named

escaped_everywhere() { # no raw escape byte printed or kept; the site shows the tags as text
  ! grep -q "$(printf '[\033\007\r]')" <<<"$out$(cat "$work/wo-err")" &&
    ! grep -lq "$(printf '[\033\007\r]')" "$w"/digests/*.txt &&
    grep -q 'culprit' "$w"/digests/*.txt &&
    ! grep -rq --include='*.html' '<script>' "$site" &&
    grep -rq --include='*.html' '&lt;script&gt;alert' "$site"
}
probe watchout "commit subjects with tags and escapes reach digests, terminal and site escaped" \
  escaped_everywhere
