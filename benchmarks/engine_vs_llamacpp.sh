#!/usr/bin/env bash
# recur against llama.cpp on the same GGUF files, interleaved in one run.
#
#   benchmarks/engine_vs_llamacpp.sh LLAMA_CPP_BIN_DIR [ROUNDS=5] [DTYPES="f32 f16 q8_0"] [THREADS="1 2"]
#
# BENCH_MODEL=llama-836m (default), qwen2-0.5b (dense) or qwen2moe-0.8b (MoE) picks the model.
# LLAMA_CPP_BIN_DIR holds a llama.cpp CPU build's llama-bench (built by you, outside this
# repository); `-` runs recur alone (when no llama.cpp build is at hand). The model is the issue's random-weight Llama: dim 2048, 16 layers, 32 heads,
# 4 KV heads, FFN 5632, vocab 32000 (836M parameters), written by `recur model new` into
# $RECUR_BENCH_DIR (default /tmp/recur-bench). Each round runs recur and llama.cpp back to
# back, alternating which goes first, for prefill 128 and decode 32 tokens; llama.cpp runs with
# -mmp 0 (weights read into memory, no mmap eviction effects). Prints medians [min..max] of
# tok/s per engine and the ratio recur / llama.cpp, and recur's decode bandwidth fraction: the
# weight bytes it streams per token times decode tok/s over the read bandwidth measured in the
# same round (`recur sysinfo --refresh` into a private cache, the sum-read on that thread count,
# just before recur runs), so the VM's 13-30 GB/s swings divide out. $LLAMA_BENCH_ARGS go to
# llama-bench as extra flags. llama.cpp runs in its default configuration, its best on a machine of
# its own: built with OpenMP (its default when libgomp is found), its threads spin at `omp
# barrier`s. OMP_WAIT_POLICY=passive in the environment makes them sleep instead, which only helps
# it when other processes share its cores; the header line says which policy ran, and figures from
# a passive run must be labelled so (recur does not use OpenMP, so it is unaffected).
set -euo pipefail
bin=${1:?usage: engine_vs_llamacpp.sh LLAMA_CPP_BIN_DIR [ROUNDS] [DTYPES] [THREADS]}
rounds=${2:-5}
dtypes=${3:-"f32 f16 q8_0"}
threads=${4:-"1 2"}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${RECUR_BENCH_DIR:-/tmp/recur-bench}
[ "$bin" = - ] || [ -x "$bin/llama-bench" ] || { echo "no llama-bench in $bin" >&2; exit 2; }
[ -x "$root/build/recur" ] || { echo "build recur first (make build)" >&2; exit 2; }
[ "$rounds" -ge 5 ] || { echo "use at least 5 rounds" >&2; exit 2; }
mkdir -p "$work"
# A private copy of recur: other engineers' builds may relink build/recur during the run.
recur=$work/recur.$$
cp "$root/build/recur" "$recur"
trap 'rm -f "$recur"' EXIT
# The model: $BENCH_MODEL picks one of three random-weight shapes (the issue's Llama by default).
shape=${BENCH_MODEL:-llama-836m}
case $shape in
  llama-836m) shape_flags="--dim 2048 --layers 16 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000" ;;
  # Qwen2.5-0.5B's shape (QKV bias, 14 heads of 64, 2 KV heads) with a 32000 vocabulary: 415M parameters.
  qwen2-0.5b) shape_flags="--arch qwen2 --dim 896 --layers 24 --heads 14 --kv-heads 2 --ffn 4864 --vocab 32000" ;;
  # A Qwen1.5-MoE-like ratio at 0.8B: 32 experts of 512, top-4, a 2048-wide gated shared expert;
  # 796M parameters, about a quarter of them active per token.
  qwen2moe-0.8b) shape_flags="--arch qwen2moe --dim 1024 --layers 12 --heads 16 --kv-heads 16 --experts 32 \
    --experts-used 4 --ffn 512 --shared-ffn 2048 --vocab 32000" ;;
  *) echo "BENCH_MODEL=$shape: expected llama-836m, qwen2-0.5b or qwen2moe-0.8b" >&2; exit 2 ;;
esac
results=$work/results.jsonl
: > "$results"
echo "model: $shape; llama.cpp OpenMP wait policy: ${OMP_WAIT_POLICY:-default (not set)}; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"

for dt in $dtypes; do
  model=$work/$shape-$dt.gguf
  if [ ! -f "$model" ]; then
    # shellcheck disable=SC2086  # the shape's flags are words
    "$recur" model new "$model" $shape_flags --dtype "$dt" --context 4096 --seed 1
  fi
  for r in $(seq 1 "$rounds"); do
    for t in $threads; do
      run_recur() {
        peak=$(RECUR_CACHE_DIR=$work/sysinfo "$recur" sysinfo --refresh --json |
          /usr/bin/python3 -c "import json,sys; r=json.load(sys.stdin)['roofline']; print(r['read_bw_1t' if $t == 1 else 'read_bw_all']['median'])")
        "$recur" engine bench -m "$model" --prefill 128 --decode 32 --runs 1 --warmup 0 --threads "$t" --json |
          /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); m={x['name']:x['value'] for x in j['metrics']}; print(json.dumps({'engine':'recur','dtype':'$dt','threads':$t,'prefill':m['prefill_tok_s'],'decode':m['decode_tok_s'],'gbs':m['decode_weight_gb_s'],'peak':$peak,'frac':m['decode_weight_gb_s']/$peak}))" >> "$results"
      }
      run_llama() {
        "$bin/llama-bench" -m "$model" -p 128 -n 32 -t "$t" -mmp 0 -r 1 ${LLAMA_BENCH_ARGS:-} -o json 2>/dev/null |
          /usr/bin/python3 -c "
import json,sys
rows=json.load(sys.stdin)
p=[x['avg_ts'] for x in rows if x['n_prompt']>0][0]; d=[x['avg_ts'] for x in rows if x['n_gen']>0][0]
print(json.dumps({'engine':'llama.cpp','dtype':'$dt','threads':$t,'prefill':p,'decode':d}))" >> "$results"
      }
      if [ "$bin" = - ]; then run_recur
      elif [ $((r % 2)) -eq 1 ]; then run_recur; run_llama; else run_llama; run_recur; fi
      echo "round $r/$rounds $dt t=$t done" >&2
    done
  done
done

/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = sorted({(r['dtype'], r['threads']) for r in rows})
def stat(v): return f"{statistics.median(v):7.1f} [{min(v):.1f}..{max(v):.1f}]"
print(f"{'dtype':6} {'thr':>3}  {'phase':7} {'recur tok/s':>22} {'llama.cpp tok/s':>22} {'ratio':>6}")
for dt, t in keys:
    for phase in ('prefill', 'decode'):
        a = [r[phase] for r in rows if r['engine'] == 'recur' and r['dtype'] == dt and r['threads'] == t]
        b = [r[phase] for r in rows if r['engine'] == 'llama.cpp' and r['dtype'] == dt and r['threads'] == t]
        if not a: continue
        ratio = f"{statistics.median(a)/statistics.median(b):6.2f}" if b else "     -"
        print(f"{dt:6} {t:>3}  {phase:7} {stat(a):>22} {stat(b) if b else '-':>22} {ratio}")
    mine = [r for r in rows if r['engine'] == 'recur' and r['dtype'] == dt and r['threads'] == t]
    if mine:
        f = [r['frac'] for r in mine]
        print(f"{dt:6} {t:>3}  recur decode: {statistics.median(r['gbs'] for r in mine):.1f} GB/s of weights, "
              f"in-run read peak {stat([r['peak'] for r in mine])} GB/s, fraction {statistics.median(f):.2f} "
              f"[{min(f):.2f}..{max(f):.2f}]")
PY
