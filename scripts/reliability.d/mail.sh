# Mail and text that other people's commit text cannot break: the watcher
# over a made history whose culprit's subject is 2,000 characters with a
# CR and terminal escapes in it, mailed through a relay as strict as
# RFC 5321 lets one be (tests/fixtures/strict_relay.py: 500 for a line
# over 998 octets or a bare CR or LF, 554 while a file exists); its
# output on the terminal; and the CSV of a series named with a comma.
# Sourced by scripts/reliability.sh, its helpers in scope.
extra_kinds+=(mail)
kind_name[mail]="mail, terminal, CSV: others' text held"

if ! python3 -c 'import aiosmtpd' 2>/dev/null; then
  echo "  skipped: mail probes (Python's aiosmtpd missing: run scripts/setup.sh)"
else
  # 30 commits a day apart in January 2024; the level drops 20% at commit
  # 16, whose subject is the hostile one.
  mrepo="$work/mail-repo"; rm -rf "$mrepo" && git init -q -b main "$mrepo"
  hostile="Make the planner $(printf '\033[2J\033]0;owned\007') think $(printf 'again %.0s' $(seq 130))$(printf '\r')hidden $(head -c 1200 /dev/zero | tr '\0' y) end"
  for i in $(seq 0 29); do
    if [ "$i" -ge 16 ]; then echo 800 > "$mrepo/level"; else echo 1000 > "$mrepo/level"; fi
    echo "$i" > "$mrepo/n"
    subject="commit number $i"; [ "$i" = 16 ] && subject=$hostile
    day=$(printf '2024-01-%02dT12:00:00Z' $((i + 1)))
    git -C "$mrepo" add -A
    GIT_AUTHOR_DATE=$day GIT_COMMITTER_DATE=$day git -C "$mrepo" commit -q --cleanup=verbatim -m "$subject"
  done
  mail_culprit=$(git -C "$mrepo" rev-parse HEAD~13)

  # The relay: a free port, its maildir, refusing while $refuse exists.
  relay_dir="$work/mail-relay"; rm -rf "$relay_dir"; mkdir -p "$relay_dir"
  refuse="$relay_dir/refuse"; : > "$refuse"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  PYTHONPATH="$here/tests/fixtures" python3 -m aiosmtpd -n -l "127.0.0.1:$port" \
    -c strict_relay.Strict "$relay_dir/box" "$refuse" >"$relay_dir/log" 2>&1 &
  relay_pid=$!
  for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.1; done

  mail_watch() { # WORK-DIR: the replay mailed through the relay; sets $rc $out $err
    out=$("$bin" watch --repo "$mrepo" --work-dir "$1" --profile "$plain" --clients 8 \
      --replay 2024-01-01..2024-01-30 --every 3 --per-night 1 --backfill 0 \
      --mail-to perf@example.org --smtp "127.0.0.1:$port" 2>"$work/mail-err")
    rc=$?; err=$(cat "$work/mail-err")
  }
  mails() { ls "$relay_dir/box/new" 2>/dev/null | wc -l; }
  findings_kept() { # the finding kept by the relay parses, its subject whole
    python3 - "$relay_dir/box/new" "$mail_culprit" <<'EOF'
import email, email.policy, os, sys
box, culprit = sys.argv[1], sys.argv[2]
found = 0
for name in os.listdir(box):
    raw = open(os.path.join(box, name), 'rb').read()
    if any(len(l) > 998 for l in raw.split(b'\r\n')) or b'\x1b' in raw:
        sys.exit(1)
    m = email.message_from_bytes(raw, policy=email.policy.default)
    s = str(m['subject'])
    if s.startswith('pgbisect watch: plain/c8'):
        found += 1
        body = m.get_content()
        ok = 'think again' in s and s.endswith('y' * 1200 + ' end') and culprit in body
        if not ok:
            sys.exit(1)
sys.exit(0 if found == 1 else 1)
EOF
  }

  w="$work/w-mail"; rm -rf "$w"
  mail_watch "$w"
  probe mail "a relay that refuses (554): the watch exits 4 saying the finding stays owed (exit $rc)" \
    eval '[ "$rc" = 4 ] && has "$err" "not delivered: the finding of plain/c8" && has "$err" "stay owed" && [ "$(mails)" = 0 ]'
  probe mail "escape bytes of a commit subject are not printed raw (stdout, stderr, report.txt)" \
    eval '! grep -q "$(printf "[\033\007\r]")" <<<"$out$err" && ! grep -rlq "$(printf "[\033\007]")" "$w/watch-hunts" && has "$out" "$mail_culprit"'
  rm -f "$refuse"
  mail_watch "$w"
  probe mail "the relay takes mail again: a 2,000-character subject with CR and ESC arrives through 998-octet lines, the start that told it exits 0 (exit $rc, $(mails) mails)" \
    eval '[ "$rc" = 0 ] && ! has "$err" "not delivered" && findings_kept'
  before=$(mails)
  mail_watch "$w"
  probe mail "a third start sends nothing again" eval '[ "$rc" = 1 ] && [ "$(mails)" = "$before" ]'
  kill "$relay_pid" 2>/dev/null; wait "$relay_pid" 2>/dev/null

  # A profile named with a comma and a quote: its series heads columns.
  cp "$plain" "$work/x,y \"q\".toml"
  w="$work/w-mail-csv"; rm -rf "$w"
  "$bin" watch --repo "$mrepo" --work-dir "$w" --profile "$work/x,y \"q\".toml" --clients 8 \
    --replay 2024-01-01..2024-01-04 --per-night 1 --backfill 0 >/dev/null 2>&1
  "$bin" watch export --csv "$work/mail.csv" --work-dir "$w" >/dev/null 2>&1
  probe mail "CSV of a series named 'x,y \"q\"' reads in Python's csv module as 8 columns a row, the last the reference" \
    python3 -c 'import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
sys.exit(0 if len(rows) == 5 and all(len(r) == 8 for r in rows) and rows[0][4] == "x,y \"q\"/c8.ratio" and rows[0][7] == "reference" else 1)' "$work/mail.csv"
fi
