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
# Targets run side by side, one per CPU (FUZZ_JOBS overrides), each with its own log, printed
# when it ends; the script fails if any target finds a crash.
jobs=${FUZZ_JOBS:-$(nproc)}
pids=()
names=()
status=0
wait_one() {
  local pid=${pids[0]} name=${names[0]}
  pids=("${pids[@]:1}")
  names=("${names[@]:1}")
  if ! wait "$pid"; then status=1; echo "fuzz: $name FAILED"; fi
  tail -n 12 "$build/fuzz-$name.log"
}
for target in "${targets[@]}"; do
  [ -x "$target" ] || continue
  name=$(basename "$target")
  work="$build/corpus/$name"
  mkdir -p "$work"
  if [ -d "$root/fuzz/corpus/$name" ]; then cp -n "$root/fuzz/corpus/$name"/* "$work"/ 2>/dev/null || true; fi
  echo "fuzz: $name for ${seconds}s"
  "$target" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/crashes/$name-" "$work" >"$build/fuzz-$name.log" 2>&1 &
  pids+=($!)
  names+=("$name")
  if [ ${#pids[@]} -ge "$jobs" ]; then wait_one; fi
done
while [ ${#pids[@]} -gt 0 ]; do wait_one; done
exit $status
