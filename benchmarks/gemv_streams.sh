#!/usr/bin/env bash
# kernel.gemv.streams A/B on real decode: recur's one-token GEMV of regrouped F16 / Q8_0 weights
# reading 1, 2 or 4 16-row groups at once (docs/gemm.md, "Streams"), interleaved in one run.
#
#   benchmarks/gemv_streams.sh [ROUNDS=5] [MODELS="qwen2moe-0.8b-f16 qwen2moe-0.8b-q8_0"] [THREADS="1 2"]
#
# MODELS name GGUF files in $RECUR_BENCH_DIR (default /tmp/recur-bench; benchmarks/engine_vs_llamacpp.sh
# writes them: llama-836m-*, qwen2-0.5b-*, qwen2moe-0.8b-*). Each round runs every streams value
# back to back (the order rotating per round) for each model and thread count: `recur engine bench
# --prefill 16 --decode 48`, decode tok/s. Prints medians [min..max] and each value's ratio to the
# per-round paired 2-stream run (the layout's original choice), and which value auto picks here.
# The roofline: decode streams every weight byte once per token, so tok/s x bytes per token over
# the machine's read bandwidth (`recur sysinfo`) bounds it; engine_vs_llamacpp.sh prints that fraction.
set -euo pipefail
rounds=${1:-5}
models=${2:-"qwen2moe-0.8b-f16 qwen2moe-0.8b-q8_0"}
threads=${3:-"1 2"}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${RECUR_BENCH_DIR:-/tmp/recur-bench}
[ "$rounds" -ge 5 ] || { echo "use at least 5 rounds" >&2; exit 2; }
[ -x "$root/build/recur" ] || { echo "build recur first (make build)" >&2; exit 2; }
for m in $models; do [ -f "$work/$m.gguf" ] || { echo "no $work/$m.gguf (benchmarks/engine_vs_llamacpp.sh writes it)" >&2; exit 2; }; done
recur=$work/recur-streams.$$
cp "$root/build/recur" "$recur"
trap 'rm -f "$recur"' EXIT
results=$work/gemv_streams.jsonl
: > "$results"
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
values=(1 2 4 auto)
for r in $(seq 1 "$rounds"); do
  for m in $models; do
    for t in $threads; do
      for i in "${!values[@]}"; do
        v=${values[$(((i + r) % ${#values[@]}))]}
        "$recur" --set "kernel.gemv.streams=$v" engine bench -m "$work/$m.gguf" --prefill 16 --decode 48 --runs 1 \
          --warmup 0 --threads "$t" --json |
          /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); m={x['name']:x['value'] for x in j['metrics']}; print(json.dumps({'round':$r,'model':'$m','threads':$t,'streams':'$v','decode':m['decode_tok_s']}))" >> "$results"
      done
    done
  done
  echo "round $r/$rounds done" >&2
done
/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def stat(v): return f"{statistics.median(v):7.1f} [{min(v):.1f}..{max(v):.1f}]"
print(f"{'model':22} {'thr':>3} {'streams':>7} {'decode tok/s':>22} {'vs 2 (paired)':>14}")
for m in dict.fromkeys(r['model'] for r in rows):
    for t in sorted({r['threads'] for r in rows}):
        by = lambda v: {r['round']: r['decode'] for r in rows if r['model'] == m and r['threads'] == t and r['streams'] == v}
        two = by('2')
        for v in ('1', '2', '4', 'auto'):
            got = by(v)
            if not got: continue
            ratios = [got[k] / two[k] for k in got if k in two]
            print(f"{m:22} {t:>3} {v:>7} {stat(list(got.values())):>22} {statistics.median(ratios):6.2f} [{min(ratios):.2f}..{max(ratios):.2f}]")
PY
