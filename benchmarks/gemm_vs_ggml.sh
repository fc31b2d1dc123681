#!/usr/bin/env bash
# recur's stored-weight GEMV / prefill GEMM against ggml's CPU MUL_MAT on the issue #7 Llama's
# matrix shapes, interleaved in one run.
#
#   benchmarks/gemm_vs_ggml.sh TEST_BACKEND_OPS [ROUNDS=5] [TYPES="f32 f16 q8_0"] [TOKENS="1 128"]
#
# TEST_BACKEND_OPS is ggml's tests/test-backend-ops, built by you outside this repository (for
# llama.cpp's matmul path build ggml with -DGGML_LLAMAFILE=ON, which llama.cpp turns on and a
# plain ggml build leaves off). It runs on all hardware threads (std::thread::hardware_concurrency),
# so recur runs with as many. Shapes (rows x cols of W): 2048x2048 (wq, wo), 5632x2048 (gate,
# up), 2048x5632 (down), 32000x2048 (LM head); tokens 1 (decode) and 128 (prefill). Each round
# runs ggml and recur back to back on one case, alternating which goes first. ggml's perf mode
# multiplies the same tensors again and again, so recur does too (bench_gemm --mb 0: one copy of
# the weights); matrices under 32 MiB are then L3-resident for both. Prints medians [min..max] of
# us per call for each, the ratio ggml / recur (> 1: recur faster), recur's GB/s (tokens 1) or
# GFLOP/s (tokens 128) and bench_gemm's paired fraction of the in-run peak (read peak of the same
# weights for tokens 1, FMA peak for 128).
set -euo pipefail
tbo=${1:?usage: gemm_vs_ggml.sh TEST_BACKEND_OPS [ROUNDS] [TYPES] [TOKENS]}
rounds=${2:-5}
types=${3:-"f32 f16 q8_0"}
tokens=${4:-"1 128"}
root=$(cd "$(dirname "$0")/.." && pwd)
bench=$root/build/benchmarks/bench_gemm
[ -x "$tbo" ] || { echo "no test-backend-ops at $tbo" >&2; exit 2; }
[ -x "$bench" ] || { echo "build bench_gemm first (cmake --build build --target bench_gemm)" >&2; exit 2; }
[ "$rounds" -ge 5 ] || { echo "use at least 5 rounds" >&2; exit 2; }
threads=$(nproc)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=$work/results.jsonl

for ty in $types; do
  case $ty in
    f32) id=0 ;; f16) id=1 ;; q8_0) id=8 ;; *) echo "type $ty: expected f32, f16 or q8_0" >&2; exit 2 ;;
  esac
  for shape in 2048x2048 5632x2048 2048x5632 32000x2048; do
    n=${shape%x*} k=${shape#*x}
    for m in $tokens; do
      # One MUL_MAT case in test-backend-ops' --test-file format: op (29 = GGML_OP_MUL_MAT), result
      # type and ne, no op params, two sources (type, ne[4], nb[4]): W [k, n] and X [k, m] f32.
      case $ty in f32) nb0=4 rb=$((k * 4)) ;; f16) nb0=2 rb=$((k * 2)) ;; q8_0) nb0=34 rb=$((k / 32 * 34)) ;; esac
      echo "29 0 $n $m 1 1 0 2 $id $k $n 1 1 $nb0 $rb $((rb * n)) $((rb * n)) 0 $k $m 1 1 4 $((4 * k)) $((4 * k * m)) $((4 * k * m)) -" \
        > "$work/case.txt"
      if [ "$m" -le 8 ]; then mode="--mode gemv --mb 0"; else mode="--mode gemm"; fi
      variant="stored $ty"
      [ "$ty" = q8_0 ] && variant="stored q8_0 act q8_0"
      for r in $(seq 1 "$rounds"); do
        run_ggml() {
          "$tbo" perf -b CPU --test-file "$work/case.txt" 2>/dev/null |
            /usr/bin/python3 -c "
import re, sys, json
for l in sys.stdin:
    g = re.search(r'([0-9.]+) us/run', l)
    if 'MUL_MAT' in l and g: print(json.dumps({'engine': 'ggml', 'key': '$ty $shape m$m', 'us': float(g.group(1))}))" >> "$results"
        }
        run_recur() {
          # shellcheck disable=SC2086
          "$bench" $mode --runs 3 --sample-ms 30 --threads "$threads" --m "$m" --n "$n" --k "$k" --variants "$variant" |
            /usr/bin/python3 -c "
import sys, json
for l in sys.stdin:
    c = [x.strip() for x in l.split('|')]
    if len(c) > 8 and c[2] == '$variant':
        frac = c[6] if $m <= 8 else c[8]
        print(json.dumps({'engine': 'recur', 'key': '$ty $shape m$m', 'us': float(c[3].split()[0]),
                          'rate': float(c[5] if $m <= 8 else c[7]), 'frac': float(frac.split()[0])}))" >> "$results"
        }
        if [ $((r % 2)) -eq 1 ]; then run_ggml; run_recur; else run_recur; run_ggml; fi
      done
      echo "$ty $shape m=$m done" >&2
    done
  done
done

/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = list(dict.fromkeys(r['key'] for r in rows))
def stat(v): return f"{statistics.median(v):.0f} [{min(v):.0f}..{max(v):.0f}]"
print("| case (type, W rows x cols, tokens) | ggml us/call | recur us/call | ggml / recur | recur GB/s or GFLOP/s | recur fraction of in-run peak |")
print("| --- | --- | --- | --- | --- | --- |")
for k in keys:
    g = [r['us'] for r in rows if r['key'] == k and r['engine'] == 'ggml']
    c = [r for r in rows if r['key'] == k and r['engine'] == 'recur']
    if not g or not c: continue
    us = [r['us'] for r in c]
    print(f"| {k} | {stat(g)} | {stat(us)} | {statistics.median(g) / statistics.median(us):.2f} | "
          f"{statistics.median(r['rate'] for r in c):.1f} | {statistics.median(r['frac'] for r in c):.2f} |")
PY
