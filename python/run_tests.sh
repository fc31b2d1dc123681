#!/usr/bin/env bash
# ctest entry python_bindings: pytest over python/tests against the build tree's recur package.
#   run_tests.sh PYTHON BUILD_PYTHON_DIR RECUR_CLI     (or: run_tests.sh --skip REASON)
# Exits 77 (ctest: skipped) saying what is missing when pybind11, numpy or pytest is.
set -u
if [ "${1:-}" = "--skip" ]; then
  echo "python_bindings skipped: ${2:-}"
  exit 77
fi
py=$1 pkgdir=$2 cli=$3
for mod in numpy pytest; do
  if ! "$py" -c "import $mod" 2>/dev/null; then
    echo "python_bindings skipped: $py has no $mod (Debian python3-$mod; scripts/setup.sh)"
    exit 77
  fi
done
if ! compgen -G "$pkgdir/recur/_recur*.so" >/dev/null; then
  echo "python_bindings: $pkgdir/recur/_recur*.so missing (build the _recur target)" >&2
  exit 1
fi
export PYTHONPATH="$pkgdir" RECUR_CLI="$cli" PYTHONDONTWRITEBYTECODE=1
unset RECUR_KNOBS
exec "$py" -m pytest -q -p no:cacheprovider "$(cd "$(dirname "$0")" && pwd)/tests" "${@:4}"
