#!/usr/bin/env bash
# The one forward pass (issue #23) against the two passes it replaced, interleaved in one run.
#
#   benchmarks/forward_before_after.sh OLD_RECUR NEW_RECUR [ROUNDS=5] [CASES="hybrid hybrid_q8 llama"]
#
# OLD_RECUR: a recur built before the change (e.g. a `git worktree add /tmp/fwd-old 3bb3045`
# built with `cmake --build build --target recur`); NEW_RECUR: one built after. Both are copied
# first (other builds may relink them during the run). Each round runs old and new back to back,
# alternating which goes first, `recur engine bench --prefill $PREFILL --decode $DECODE --runs 1
# --warmup 0` (default 128 and 32), on:
#   hybrid     the old embedded default's shape (hybrid d768, 12 layers kkka, f32), 2 threads;
#   hybrid_q8  the same shape in Q8_0 (the regrouped weights now reach the hybrid), 2 threads;
#   llama      the issue's 836M Llama (dim 2048, 16 layers, 32 heads, 4 KV heads, FFN 5632,
#              vocab 32000) in $LLAMA_DTYPES (default "f32 f16 q8_0") on $LLAMA_THREADS (default
#              "1 2") threads.
# Models are written into $RECUR_BENCH_DIR (default /tmp/recur-bench) by NEW_RECUR's
# `model new`. Prints per case and phase the medians [min..max] of tok/s for old and new, and the
# median of the per-round ratio new / old with its min..max (pairs from one round share the
# machine's state, so the ratio is steadier than either speed).
set -euo pipefail
old_src=${1:?usage: forward_before_after.sh OLD_RECUR NEW_RECUR [ROUNDS] [CASES]}
new_src=${2:?usage: forward_before_after.sh OLD_RECUR NEW_RECUR [ROUNDS] [CASES]}
rounds=${3:-5}
cases=${4:-"hybrid hybrid_q8 llama"}
prefill=${PREFILL:-128}
decode=${DECODE:-32}
llama_dtypes=${LLAMA_DTYPES:-"f32 f16 q8_0"}
llama_threads=${LLAMA_THREADS:-"1 2"}
[ "$rounds" -ge 5 ] || { echo "use at least 5 rounds" >&2; exit 2; }
work=${RECUR_BENCH_DIR:-/tmp/recur-bench}
mkdir -p "$work"
old=$work/recur-old.$$
new=$work/recur-new.$$
cp "$old_src" "$old"
cp "$new_src" "$new"
trap 'rm -f "$old" "$new"' EXIT
results=$work/forward_before_after.jsonl
: > "$results"

# name model threads: one per line
runs=()
for c in $cases; do
  case $c in
    hybrid)  # an explicit file: "default" is a different model in binaries before and after 2026-12-05
      m=$work/hybrid-d768-l12-f32.gguf
      [ -f "$m" ] || "$new" model new "$m" --arch hybrid --dim 768 --layers 12 --heads 12 --kv-heads 4 --ffn 2048 \
        --vocab 32000 --context 4096 --kda-heads 6 --kda-key-heads 6 --kda-head-dim 128 --tied --dtype f32 --seed 1
      runs+=("hybrid $m 2") ;;
    hybrid_q8)
      m=$work/hybrid-d768-l12-q8_0.gguf
      [ -f "$m" ] || "$new" model new "$m" --arch hybrid --dim 768 --layers 12 --heads 12 --kv-heads 4 --ffn 2048 \
        --vocab 32000 --context 4096 --kda-heads 6 --kda-key-heads 6 --kda-head-dim 128 --tied --dtype q8_0 --seed 1
      runs+=("hybrid_q8 $m 2") ;;
    llama)
      for dt in $llama_dtypes; do
        m=$work/llama-836m-$dt.gguf
        [ -f "$m" ] || "$new" model new "$m" --dim 2048 --layers 16 --heads 32 --kv-heads 4 --ffn 5632 --vocab 32000 \
          --dtype "$dt" --context 4096 --seed 1
        for t in $llama_threads; do runs+=("llama_$dt $m $t"); done
      done ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
done

bench() {  # which binary name model threads round
  # Each binary keeps its own roofline cache: two builds with different cache schemas would
  # otherwise each measure the machine again right before every run of the other.
  RECUR_CACHE_DIR="$work/cache-$1" "$2" engine bench -m "$4" --prefill "$prefill" --decode "$decode" --runs 1 --warmup 0 --threads "$5" --json |
    /usr/bin/python3 -c "import json,sys; j=json.load(sys.stdin); m={x['name']:x['value'] for x in j['metrics']}
print(json.dumps({'bin':'$1','case':'$3','threads':$5,'round':$6,'prefill':m['prefill_tok_s'],'decode':m['decode_tok_s']}))" >> "$results"
}

for r in $(seq 1 "$rounds"); do
  for spec in "${runs[@]}"; do
    read -r name model threads <<< "$spec"
    if [ $((r % 2)) -eq 1 ]; then bench old "$old" "$name" "$model" "$threads" "$r"; bench new "$new" "$name" "$model" "$threads" "$r"
    else bench new "$new" "$name" "$model" "$threads" "$r"; bench old "$old" "$name" "$model" "$threads" "$r"; fi
  done
done

/usr/bin/python3 - "$results" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
keys = []
for r in rows:
    k = (r['case'], r['threads'])
    if k not in keys: keys.append(k)
def fmt(v): return f"{statistics.median(v):.1f} [{min(v):.1f}..{max(v):.1f}]"
print("| case | threads | phase | old tok/s | new tok/s | new/old per round |")
print("| --- | --- | --- | --- | --- | --- |")
for case, t in keys:
    for phase in ('decode', 'prefill'):
        by = {b: {r['round']: r[phase] for r in rows if r['case'] == case and r['threads'] == t and r['bin'] == b}
              for b in ('old', 'new')}
        ratios = [by['new'][k] / by['old'][k] for k in by['old'] if k in by['new']]
        print(f"| {case} | {t} | {phase} | {fmt(list(by['old'].values()))} | {fmt(list(by['new'].values()))} | "
              f"{statistics.median(ratios):.3f} [{min(ratios):.3f}..{max(ratios):.3f}] |")
PY
