#!/bin/sh
# Continuous batching on vs off (docs/performance.md, "Serving"): two `recur serve` processes on
# the same model, `--batching on` (defaults: --max-seqs 16, --max-batch-tokens 256) and
# `--batching off` (one worker, one sequence at a time), both with every CPU; `recur loadgen
# --stream` at concurrency 1, 4 and 16 (requests 4, 8, 16; random prompt ids, ignore_eos), RUNS
# rounds, each round every concurrency against both servers in alternating order (interleaved).
# Prints per mode and concurrency the median over runs, with min..max, of output tok/s and of
# each run's TTFT and ITL p50/p99.
# Usage: [MODES="on off"] [CONCURRENCY="1 4 16"] benchmarks/serve_batching.sh RECUR [RUNS=5] [INPUT=64] [OUTPUT=32] [MODEL]
# A mode is on, off, or onN (batching with --max-batch-tokens N).
set -u
RECUR="$1"
RUNS="${2:-5}"
INPUT="${3:-64}"
OUTPUT="${4:-32}"
MODEL="${5:-}"
T="$(mktemp -d)"
PIDS=""
cleanup() { for p in $PIDS; do kill "$p" 2>/dev/null; done; rm -rf "$T"; }
trap cleanup EXIT
trap "exit 1" INT TERM
MODES="${MODES:-on off}"
CONCURRENCY="${CONCURRENCY:-1 4 16}"
MARG=""
[ -n "$MODEL" ] && MARG="-m $MODEL"
flags_of() {
  case "$1" in
    on | off) echo "--batching $1" ;;
    on*) echo "--batching on --max-batch-tokens ${1#on}" ;;
  esac
}
port_of() {  # waits for "listening on http://127.0.0.1:PORT" in $1 (model loading included)
  for _ in $(seq 1 600); do
    p=$(sed -n 's|^listening on http://127.0.0.1:\([0-9]*\).*|\1|p' "$1")
    [ -n "$p" ] && { echo "$p"; return; }
    sleep 0.1
  done
}
for mode in $MODES; do
  # shellcheck disable=SC2086
  "$RECUR" serve $MARG --port 0 $(flags_of "$mode") 2> "$T/$mode.err" &
  PIDS="$PIDS $!"
  p=$(port_of "$T/$mode.err")
  [ -n "$p" ] || { cat "$T/$mode.err"; exit 1; }
  echo "$p" > "$T/$mode.port"
done
for run in $(seq 1 "$RUNS"); do
  for c in $CONCURRENCY; do
    order="$MODES"
    [ $((run % 2)) = 0 ] && order=$(echo "$MODES" | tr ' ' '\n' | tac | tr '\n' ' ')
    for mode in $order; do
      n=$c
      [ "$c" -lt 4 ] && n=4
      [ "$c" = 4 ] && n=8
      "$RECUR" loadgen --url "http://127.0.0.1:$(cat "$T/$mode.port")" --concurrency "$c" --requests "$n" \
        --input-len "$INPUT" --output-len "$OUTPUT" --seed "$run" --stream --json > "$T/$mode-$c-$run.json" \
        || { echo "loadgen failed: $mode c=$c run $run" >&2; cat "$T/$mode-$c-$run.json" >&2; exit 1; }
    done
  done
  echo "run $run done ($(date -u +%H:%M:%S), load $(cut -d' ' -f1-3 /proc/loadavg))" >&2
done
/usr/bin/python3 - "$T" "$RUNS" "$MODES" "$CONCURRENCY" <<'PY'
import json, statistics, sys
d, runs, modes, concurrency = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), [int(c) for c in sys.argv[4].split()]
def cell(values, fmt):
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}..{max(values):{fmt}})"
print("| concurrency | batching | output tok/s | TTFT p50 ms | TTFT p99 ms | ITL p50 ms | ITL p99 ms |")
print("| --- | --- | --- | --- | --- | --- | --- |")
for c in concurrency:
    for mode in modes:
        rs = [json.load(open(f"{d}/{mode}-{c}-{r}.json")) for r in range(1, runs + 1)]
        print(f"| {c} | {mode} | {cell([r['output_throughput'] for r in rs], '.1f')} "
              f"| {cell([r['ttft_ms']['p50'] for r in rs], '.0f')} | {cell([r['ttft_ms']['p99'] for r in rs], '.0f')} "
              f"| {cell([r['itl_ms']['p50'] for r in rs], '.0f')} | {cell([r['itl_ms']['p99'] for r in rs], '.0f')} |")
PY
