#!/usr/bin/env bash
# recur serve against llama.cpp's llama-server on the same GGUF file and the same load (issue #9),
# interleaved in one run.
#
#   benchmarks/serve_vs_llama_server.sh LLAMA_CPP_BIN_DIR MODEL.gguf [ROUNDS=5] [CONCURRENCY="1 4 16"]
#
# LLAMA_CPP_BIN_DIR holds a llama.cpp CPU build's llama-server (built by you, outside this
# repository). Both servers start once and stay up; each round runs `recur loadgen --stream`
# against each (alternating which goes first) at every concurrency C, with max(4, 2C) requests of
# $INPUT_LEN random prompt ids (default 32) and $OUTPUT_LEN generated tokens (default 32,
# ignore_eos). llama-server gets -t/-tb $THREADS (default: every CPU), 16 slots (-np 16) and a
# context of 16 x 2 x (input + output); recur serve gets --threads $THREADS plus $RECUR_SERVE_ARGS.
# Prints medians [min..max] of aggregate output tok/s and TTFT p50 / p99 per server and the ratio
# recur / llama-server. llama-server runs in its default configuration (its OpenMP threads spin at
# barriers, OpenMP's default wait policy): the peer's best setting on a machine of its own. Setting
# OMP_WAIT_POLICY=passive in the environment makes them sleep instead, which helps llama.cpp only
# when other processes share its cores; figures from such runs must say so (docs/performance.md).
set -euo pipefail
bin=${1:?usage: serve_vs_llama_server.sh LLAMA_CPP_BIN_DIR MODEL.gguf [ROUNDS] [CONCURRENCY]}
model=${2:?usage: serve_vs_llama_server.sh LLAMA_CPP_BIN_DIR MODEL.gguf [ROUNDS] [CONCURRENCY]}
rounds=${3:-5}
concurrency=${4:-"1 4 16"}
in_len=${INPUT_LEN:-32}
out_len=${OUTPUT_LEN:-32}
threads=${THREADS:-$(nproc)}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${RECUR_BENCH_DIR:-/tmp/recur-bench}
[ -x "$bin/llama-server" ] || { echo "no llama-server in $bin" >&2; exit 2; }
recur_bin=${RECUR_BIN:-$root/build/recur}  # RECUR_BIN: another recur build to measure
[ -x "$recur_bin" ] || { echo "build recur first (make build)" >&2; exit 2; }
[ -f "$model" ] || { echo "no model file $model" >&2; exit 2; }
mkdir -p "$work"
# A private copy of recur: other engineers' builds may relink build/recur during the run.
recur=$work/recur.$$
cp "$recur_bin" "$recur"
results=$work/serve_results.jsonl
: > "$results"

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_healthy() {
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$1/health" > /dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "server on port $1 did not become healthy" >&2
  return 1
}
llama_port=$(free_port)
"$bin/llama-server" -m "$model" --host 127.0.0.1 --port "$llama_port" -t "$threads" -tb "$threads" -np 16 \
  -c $((16 * 2 * (in_len + out_len))) --no-mmap > "$work/llama-server.log" 2>&1 &
llama_pid=$!
recur_port=$(free_port)
# shellcheck disable=SC2086  # RECUR_SERVE_ARGS is a list of flags
"$recur" serve -m "$model" --port "$recur_port" --threads "$threads" ${RECUR_SERVE_ARGS:-} > "$work/recur-serve.log" 2>&1 &
recur_pid=$!
trap 'kill $llama_pid $recur_pid 2>/dev/null || true; rm -f "$recur"' EXIT
wait_healthy "$llama_port"
wait_healthy "$recur_port"

run_load() {  # engine port concurrency round
  local n=$((2 * $3 > 4 ? 2 * $3 : 4))
  "$recur" loadgen --url "http://127.0.0.1:$2" --concurrency "$3" --requests "$n" --input-len "$in_len" \
    --output-len "$out_len" --seed "$4" --stream --json |
    /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); j['engine']='$1'; print(json.dumps(j))" >> "$results"
}
for r in $(seq 1 "$rounds"); do
  for c in $concurrency; do
    if [ $((r % 2)) -eq 1 ]; then run_load recur "$recur_port" "$c" "$r"; run_load llama-server "$llama_port" "$c" "$r"
    else run_load llama-server "$llama_port" "$c" "$r"; run_load recur "$recur_port" "$c" "$r"; fi
    echo "round $r/$rounds concurrency $c done" >&2
  done
done

/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def stat(v): return f"{statistics.median(v):.1f} [{min(v):.1f}..{max(v):.1f}]"
print(f"{'conc':>4}  {'server':12} {'output tok/s':>22} {'TTFT p50 ms':>24} {'TTFT p99 ms':>24} {'failed':>6}")
for c in sorted({r['concurrency'] for r in rows}):
    med = {}
    for e in ('recur', 'llama-server'):
        mine = [r for r in rows if r['engine'] == e and r['concurrency'] == c]
        if not mine: continue
        tput = [r['output_throughput'] for r in mine]
        med[e] = statistics.median(tput)
        print(f"{c:>4}  {e:12} {stat(tput):>22} {stat([r['ttft_ms']['p50'] for r in mine]):>24} "
              f"{stat([r['ttft_ms']['p99'] for r in mine]):>24} {sum(r['failed'] for r in mine):>6}")
    if len(med) == 2 and med['llama-server'] > 0:
        print(f"{c:>4}  recur / llama-server throughput {med['recur'] / med['llama-server']:.2f}x")
PY
