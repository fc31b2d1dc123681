#!/bin/sh
# Continuous batching on the disaggregated decode worker (docs/performance.md, "Disaggregated
# decode: continuous batching"): two stacks of router + prefill + decode (`recur serve --role ...`),
# one per binary (e.g. a build from before the change and one after), on this host (shared-memory
# transfer). Each run sends `recur loadgen --stream` at concurrency 1 and 4 to each stack, the
# (binary, concurrency) cells in a rotating order (interleaved runs, so the host's load drifts
# over both alike). Prints per cell the median over runs of the aggregate output tok/s with
# min..max, and the medians of TTFT and ITL p50.
# Usage: [INPUT=32] [OUTPUT=32] [REQUESTS=8] [THREADS=2] [MAX_SEQS=16]
#        benchmarks/serve_disagg_decode_batching.sh RECUR_BEFORE RECUR_AFTER [RUNS=5] [MODEL]
set -u
OLD="$1"
NEW="$2"
RUNS="${3:-5}"
MODEL="${4:-}"
INPUT="${INPUT:-32}"
OUTPUT="${OUTPUT:-32}"
REQUESTS="${REQUESTS:-8}"
THREADS="${THREADS:-2}"
MAX_SEQS="${MAX_SEQS:-16}"
T="$(mktemp -d)"
PIDS=""
# The disaggregated roles need a peer key (docs/serve.md, "Authentication").
export RECUR_PEER_KEY="${RECUR_PEER_KEY:-bench-$$-$(date +%s%N)}"
cleanup() {
  for p in $PIDS; do kill "$p" 2>/dev/null; done
  rm -rf "$T"
}
trap cleanup EXIT
trap "exit 1" INT TERM
MARG=""
[ -n "$MODEL" ] && MARG="-m $MODEL"
. "$(dirname "$0")/../tests/serve_port.sh"  # serve_port ERRFILE: the port once /health answers
# stack NAME RECUR: starts decode, prefill and router; sets URL_NAME to the router's URL.
stack() {
  # shellcheck disable=SC2086
  "$2" serve --role decode $MARG --port 0 --threads "$THREADS" --kv-slots 4 --max-seqs "$MAX_SEQS" 2> "$T/$1-decode.err" &
  PIDS="$PIDS $!"
  # shellcheck disable=SC2086
  "$2" serve --role prefill $MARG --port 0 --threads "$THREADS" 2> "$T/$1-prefill.err" &
  PIDS="$PIDS $!"
  d=$(serve_port "$T/$1-decode.err")
  p=$(serve_port "$T/$1-prefill.err")
  [ -n "$d" ] && [ -n "$p" ] || { cat "$T/$1"-*.err >&2; exit 1; }
  # shellcheck disable=SC2086
  "$2" serve --role router $MARG --port 0 --prefill "http://127.0.0.1:$p" --decode "http://127.0.0.1:$d" \
    2> "$T/$1-router.err" &
  PIDS="$PIDS $!"
  r=$(serve_port "$T/$1-router.err")
  [ -n "$r" ] || { cat "$T/$1-router.err" >&2; exit 1; }
  eval "URL_$1=http://127.0.0.1:$r"
}
stack before "$OLD"
stack after "$NEW"
CELLS="before:1 after:1 before:4 after:4"
run=0
while [ "$run" -lt "$RUNS" ]; do
  # Rotate the cell order each run.
  set -- $CELLS
  i=0
  while [ "$i" -lt $((run % 4)) ]; do set -- "$@" "$1"; shift; i=$((i + 1)); done
  for cell in "$@"; do
    which=${cell%:*}
    conc=${cell#*:}
    eval "url=\$URL_$which"
    # shellcheck disable=SC2154
    "$NEW" loadgen --url "$url" --concurrency "$conc" --requests "$REQUESTS" --input-len "$INPUT" \
      --output-len "$OUTPUT" --stream --json --seed "$run" > "$T/$which-$conc-$run.json" ||
      { echo "loadgen failed: $which c=$conc run $run" >&2; cat "$T/$which-$conc-$run.json" >&2; exit 1; }
  done
  run=$((run + 1))
done
/usr/bin/python3 - "$T" "$RUNS" "$INPUT" "$OUTPUT" "$REQUESTS" <<'PY'
import json, statistics, sys
t, runs, inp, out, reqs = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
print(f"{runs} interleaved runs, {reqs} requests of {inp} prompt + {out} output tokens per cell "
      "(median over runs, min..max)")
print(f"{'binary':<8} {'conc':>4} {'output tok/s':>24} {'TTFT p50 ms':>12} {'ITL p50 ms':>11}")
for which in ("before", "after"):
    for conc in (1, 4):
        rs = [json.load(open(f"{t}/{which}-{conc}-{r}.json")) for r in range(runs)]
        tput = [r["output_throughput"] for r in rs]
        ttft = statistics.median(r["ttft_ms"]["p50"] for r in rs)
        itl = statistics.median(r["itl_ms"]["p50"] for r in rs)
        print(f"{which:<8} {conc:>4} {statistics.median(tput):>10.1f} ({min(tput):.1f}..{max(tput):.1f}) "
              f"{ttft:>12.1f} {itl:>11.1f}")
PY
