# Shared by the end-to-end shell tests: `. "$(dirname "$0")/testlib.sh"` after set -u.
#   T             a fresh scratch folder, also RECUR_CACHE_DIR (models, sysinfo), removed at exit;
#                 seeded with the once-measured roofline (sysinfo_seed.sh)
#   fail MSG      records a failure and goes on
#   finish NAME   prints "NAME: ok" or the failure count, and exits 0 or 1
#   expect CODE CMD...   runs CMD (60 s at most), stdout in $T/out, stderr in $T/err; checks its exit code
#   contains FILE TEXT / lacks FILE TEXT   a fixed string is / is not in FILE
export RECUR_CACHE_DIR="$(mktemp -d)"
T="$RECUR_CACHE_DIR"
. "$(dirname "$0")/sysinfo_seed.sh"
trap 'rm -rf "$T"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
finish() {
  if [ "$failures" = 0 ]; then echo "$1: ok"; exit 0; fi
  echo "$1: $failures failure(s)"
  exit 1
}
expect() {
  local want=$1; shift
  timeout 60 "$@" >"$T/out" 2>"$T/err"
  local got=$?
  [ "$got" -eq "$want" ] || fail "exit $got (want $want): $* -- $(head -c 300 "$T/err")"
}
contains() { grep -qF -- "$2" "$1" || fail "$1 lacks '$2': $(head -c 400 "$1")"; }
lacks() { ! grep -qF -- "$2" "$1" || fail "$1 has '$2': $(head -c 400 "$1")"; }
