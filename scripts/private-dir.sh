# Sourced by the scripts in scripts/ (POSIX sh): the folder a script
# writes its outputs into, checked as pgbisect checks its work dir
# (src/folders.rs).
#
# These scripts are run as root, with folders under /var/tmp where any
# user can make a folder first and plant links in it: a `> "$work/x.txt"`
# there truncates whatever the link names. So every level of the folder,
# from / down, must be a real folder (not a link), owned by this user or
# root, and not writable by group or others unless sticky (as /tmp and
# /var/tmp are). Missing levels are made one at a time, mode 755, each
# checked before the next is made in it. In such a folder nobody else can
# have planted anything, and `>` writes where it says.
#
#   private_dir DIR [UID]   makes and checks DIR; UID may own its last level
#                           (PostgreSQL's user, for a data folder)
#   fresh_dir NAME          prints a new private folder, mktemp -d

# private_dir_level LEVEL [UID]: one level; says what is wrong, fails.
private_dir_level() {
  if [ -L "$1" ]; then
    echo "$1 is a symbolic link; give the real folder, or remove the link" >&2
    return 1
  fi
  if [ ! -d "$1" ]; then
    echo "$1 is not a folder; move it away, or give another folder" >&2
    return 1
  fi
  set -- "$1" "${2:-}" "$(stat -c %u "$1")" "$(stat -c %a "$1")"
  if [ "$3" != "$(id -u)" ] && [ "$3" != 0 ] && [ "$3" != "$2" ]; then
    echo "$1 belongs to another user (uid $3), who could plant links in it; give a folder of your own" >&2
    return 1
  fi
  # Written by group or others, and not sticky.
  if [ $(( 0$4 & 022 )) -ne 0 ] && [ $(( 0$4 & 01000 )) -eq 0 ]; then
    echo "$1 is writable by other users (mode $4); \`chmod go-w $1\`, or give another folder" >&2
    return 1
  fi
}

private_dir() {
  case $1 in
    /*) set -- "$1" "${2:-}" ;;
    .) set -- "$(pwd -P)" "${2:-}" ;;
    *) set -- "$(pwd -P)/${1#./}" "${2:-}" ;;
  esac
  case /$1/ in
    */../*|*/./*)
      echo "$1: give the folder without . or .. in it" >&2
      return 2 ;;
  esac
  private_dir_level / || return 2
  _pd_level=""
  _pd_rest=${1#/}
  while [ -n "$_pd_rest" ]; do
    _pd_part=${_pd_rest%%/*}
    case $_pd_rest in
      */*) _pd_rest=${_pd_rest#*/} ;;
      *) _pd_rest="" ;;
    esac
    [ -n "$_pd_part" ] || continue
    _pd_level="$_pd_level/$_pd_part"
    if [ ! -e "$_pd_level" ] && [ ! -L "$_pd_level" ]; then
      mkdir -m 755 "$_pd_level" || return 2
    fi
    if [ -n "$_pd_rest" ] && [ "$_pd_rest" != / ]; then
      private_dir_level "$_pd_level" || return 2
    else
      private_dir_level "$_pd_level" "$2" || return 2
    fi
  done
}

fresh_dir() {
  mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX"
}
