# Probes of the one hunt runner (sourced by scripts/reliability.sh, its
# helpers in scope): the watcher's hunt of a change reports what a
# person's hunt of the same range reports, and the command its report
# gives to hunt the range again names the profile file by its absolute
# path and runs as pasted in the checkout. Self-contained: its own dated
# history (rr-repo), work dirs and caches (rr-*), all under $work.
echo "one hunt runner: the watcher's reports as a person's, its rerun line runs"
extra_kinds+=(rerun)
kind_name[rerun]="watch hunts report as hunts; rerun runs"

# Fourteen commits a day apart from 2024-01-01; the level drops 20% on
# the 9th: a replay confirms the drop and hunts it.
rr_repo="$work/rr-repo"
rm -rf "$rr_repo" && git init -q -b main "$rr_repo"
for i in $(seq 1 14); do
  day=$(printf '2024-01-%02dT12:00:00Z' "$i")
  if [ "$i" -ge 9 ]; then echo 800 > "$rr_repo/level"; else echo 1000 > "$rr_repo/level"; fi
  echo "$i" > "$rr_repo/n"
  git -C "$rr_repo" add -A
  GIT_AUTHOR_DATE=$day GIT_COMMITTER_DATE=$day git -C "$rr_repo" commit -q -m "commit $i"
done
rr_culprit=$(git -C "$rr_repo" rev-parse HEAD~5)

# The watcher given the profile as a path relative to where it started.
rr_w="$work/rr-w"
rm -rf "$rr_w" "$work/rr-cache" "$work/rr-person"
out=$(cd "$work" && "$bin" watch --repo "$rr_repo" --work-dir "$rr_w" --profile "$(basename "$plain")" \
  --clients 8 --replay 2024-01-01..2024-01-14 --backfill 0 2>&1)
rc=$?
rr_hunt=$(ls -d "$rr_w"/watch-hunts/change-* 2>/dev/null | head -1)

# The command of the watcher's report, one argument a line.
rr_again() { python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["made"]["command"]))' "$rr_hunt/report.json"; }
rr_names_the_file() {
  [ "$rc" = 0 ] && [ -n "$rr_hunt" ] || return 1
  local named
  named=$(rr_again | grep -A1 -x -- --profile | tail -1)
  [ "$named" = "$(realpath "$plain")" ]
}
probe rerun "the watcher's rerun line names the profile file by its absolute path (exit $rc)" rr_names_the_file

# Pasted as it is in the checkout, where the profile's relative name would
# not be found: a hunt that ends with the watcher's culprit.
rr_reruns() {
  [ -n "$rr_hunt" ] || return 1
  local argv=()
  mapfile -t argv < <(rr_again)
  out=$(cd "$rr_repo" && XDG_CACHE_HOME="$work/rr-cache" "$bin" "${argv[@]:1}" --json "$work/rr-again.json" 2>&1)
  rc=$?
  [ "$rc" = 0 ] && python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if [c["commit"] for c in r["culprits"]] == [sys.argv[2]] else 1)' \
    "$work/rr-again.json" "$rr_culprit"
}
probe rerun "the watcher's rerun line, pasted in the checkout, finds its culprit" rr_reruns

# A person hunts the change's range by hand: the two reports have the same
# fields filled and the same sections.
rr_alike() {
  [ -n "$rr_hunt" ] || return 1
  local range
  range=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["good"]["id"], r["bad"]["id"])' "$rr_hunt/report.json")
  out=$("$bin" --repo "$rr_repo" --work-dir "$work/rr-person" --good "${range% *}" --bad "${range#* }" \
    --profile "$plain" --clients 8 2>&1)
  rc=$?
  [ "$rc" = 0 ] || return 1
  python3 - "$rr_hunt" "$(ls -d "$work"/rr-person/hunts/* | head -1)" <<'PY'
import json, sys
def filled(v, at, out):
    if isinstance(v, dict):
        for k, x in v.items():
            if x not in (None, "", [], {}):
                out.add(at + "/" + k)
                filled(x, at + "/" + k, out)
    elif isinstance(v, list):
        for x in v:
            filled(x, at + "[]", out)
    return out
def headings(path):
    lines = open(path).read().splitlines()
    return [a for a, b in zip(lines, lines[1:]) if b and set(b) == {"-"}]
watched, person = sys.argv[1], sys.argv[2]
ours = filled(json.load(open(watched + "/report.json")), "", set())
theirs = filled(json.load(open(person + "/result.json")), "", set())
if ours != theirs:
    print("    fields told apart:", sorted(ours ^ theirs))
    sys.exit(1)
if headings(watched + "/report.txt") != headings(person + "/report.txt"):
    print("    sections told apart")
    sys.exit(1)
PY
}
probe rerun "the watcher's hunt report has a person's fields and sections" rr_alike
