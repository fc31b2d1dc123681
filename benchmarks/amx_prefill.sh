#!/usr/bin/env bash
# kernel.gemm.amx on an AMX machine (docs/gemm.md "AMX", "Left for an AMX machine"): what an AMX
# session runs to measure the tiles, interleaved in one run.
#
#   benchmarks/amx_prefill.sh [ROUNDS=5] [MODELS="llama-836m-q8_0"] [THREADS="1 2"]
#
# 1. The kernel: `recur --set kernel.gemm.amx=on bench gemm_q8_0 --variant amx --vs stored` at
#    M = 16, 128, 512 over the 836M Llama's FFN shape (N 5632, K 2048), ABBA with its own CI.
# 2. The engine: each round runs `recur engine bench --prefill 128 --decode 16` with the knob off
#    and on back to back (the order alternating per round) for each model and thread count, and
#    prints medians [min..max] of prefill and decode tok/s and the per-round paired on/off ratios
#    (decode must not move: M < 16 keeps the stored kernels).
# MODELS name GGUF files in $RECUR_BENCH_DIR (default /tmp/recur-bench; benchmarks/engine_vs_llamacpp.sh
# writes them). Refuses to start where kernel.gemm.amx=on is refused (no AMX, or its self-check
# failed), printing recur's reason.
set -euo pipefail
rounds=${1:-5}
models=${2:-"llama-836m-q8_0"}
threads=${3:-"1 2"}
root=$(cd "$(dirname "$0")/.." && pwd)
work=${RECUR_BENCH_DIR:-/tmp/recur-bench}
[ "$rounds" -ge 5 ] || { echo "use at least 5 rounds" >&2; exit 2; }
[ -x "$root/build/recur" ] || { echo "build recur first (make build)" >&2; exit 2; }
"$root/build/recur" --set kernel.gemm.amx=on knobs > /dev/null ||
  { echo "kernel.gemm.amx=on is refused here (above)" >&2; exit 2; }
for m in $models; do [ -f "$work/$m.gguf" ] || { echo "no $work/$m.gguf (benchmarks/engine_vs_llamacpp.sh writes it)" >&2; exit 2; }; done
recur=$work/recur-amx.$$
cp "$root/build/recur" "$recur"
trap 'rm -f "$recur"' EXIT
echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg); CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"

for m in 16 128 512; do
  echo "== gemm_q8_0 amx vs stored, M $m N 5632 K 2048 (B = K / 32 = 64)"
  "$recur" --set kernel.gemm.amx=on bench gemm_q8_0 --variant amx --vs stored --shape "M$m,N5632,B64"
done

results=$work/amx_prefill.jsonl
: > "$results"
for r in $(seq 1 "$rounds"); do
  for m in $models; do
    for t in $threads; do
      order=(off on)
      [ $((r % 2)) -eq 0 ] && order=(on off)
      for v in "${order[@]}"; do
        "$recur" --set "kernel.gemm.amx=$v" engine bench -m "$work/$m.gguf" --prefill 128 --decode 16 --runs 1 \
          --warmup 1 --threads "$t" --json |
          /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); m={x['name']:x['value'] for x in j['metrics']}; print(json.dumps({'round':$r,'model':'$m','threads':$t,'amx':'$v','prefill':m['prefill_tok_s'],'decode':m['decode_tok_s']}))" >> "$results"
      done
    done
  done
  echo "round $r/$rounds done" >&2
done
/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
def stat(v): return f"{statistics.median(v):7.1f} [{min(v):.1f}..{max(v):.1f}]"
print(f"{'model':18} {'thr':>3} {'amx':>3} {'prefill tok/s':>22} {'decode tok/s':>22} {'on/off prefill':>16} {'on/off decode':>16}")
for m in dict.fromkeys(r['model'] for r in rows):
    for t in sorted({r['threads'] for r in rows}):
        by = lambda v, key: {r['round']: r[key] for r in rows if r['model'] == m and r['threads'] == t and r['amx'] == v}
        for v in ('off', 'on'):
            line = f"{m:18} {t:>3} {v:>3} {stat(list(by(v, 'prefill').values())):>22} {stat(list(by(v, 'decode').values())):>22}"
            if v == 'on':
                for key in ('prefill', 'decode'):
                    on, off = by('on', key), by('off', key)
                    ratios = [on[k] / off[k] for k in on if k in off]
                    line += f" {statistics.median(ratios):6.2f} [{min(ratios):.2f}..{max(ratios):.2f}]"
            print(line)
PY
