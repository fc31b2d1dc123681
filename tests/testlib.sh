# Shared by the end-to-end shell tests: `. "$(dirname "$0")/testlib.sh"` after set -u.
#   T             a fresh scratch folder, also RECUR_CACHE_DIR (models, sysinfo), removed at exit;
#                 seeded with the once-measured roofline (sysinfo_seed.sh)
#   fail MSG      records a failure and goes on
#   finish NAME   prints "NAME: ok" or the failure count, and exits 0 or 1
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
