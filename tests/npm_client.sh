# Shared by the tests that drive recur with an official npm client (tests/npm, installed by
# scripts/setup.sh): `. "$(dirname "$0")/npm_client.sh"` after SRC is set.
#   require_npm_client TEST PACKAGE   exits 77 (skip) where node or npm are absent; fails (exit 1)
#                                     saying how to install it where PACKAGE is not in tests/npm
require_npm_client() {
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    echo "$1: SKIP: node and npm are needed for the official $2 client (scripts/setup.sh installs it)"
    exit 77
  fi
  if [ ! -d "$SRC/tests/npm/node_modules/$2" ]; then
    echo "FAIL: $2 is not installed in $SRC/tests/npm/node_modules; run scripts/setup.sh" >&2
    exit 1
  fi
}
