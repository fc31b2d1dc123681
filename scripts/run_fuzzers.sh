#!/usr/bin/env bash
# Runs every libFuzzer target in a fuzz build for a bounded time each.
#   scripts/run_fuzzers.sh BUILD_DIR SECONDS_PER_TARGET
# Seeds come from fuzz/corpus/<target>/ when present; new inputs go to a scratch copy, so the
# committed corpus only changes by hand. A crash leaves its input in BUILD_DIR/crashes/.
set -euo pipefail
build=${1:?usage: run_fuzzers.sh BUILD_DIR SECONDS}
seconds=${2:?usage: run_fuzzers.sh BUILD_DIR SECONDS}
root=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$build/crashes"
shopt -s nullglob
targets=("$build"/fuzz/fuzz_*)
if [ ${#targets[@]} -eq 0 ]; then
  echo "fuzz: no targets in $build/fuzz"
  exit 0
fi
for target in "${targets[@]}"; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  work="$build/corpus/$name"
  mkdir -p "$work"
  if [ -d "$root/fuzz/corpus/$name" ]; then cp -n "$root/fuzz/corpus/$name"/* "$work"/ 2>/dev/null || true; fi
  echo "fuzz: $name for ${seconds}s"
  "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$name-" "$work" 2>&1 | tail -n 12
done
