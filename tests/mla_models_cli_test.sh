#!/bin/sh
# deepseek2 and kimi-linear from the command line (docs/engine.md "MLA"): model new writes
# llama.cpp's layout, generate runs it (the blocked absorbed form at the machine's best ISA by
# default, expand by knob, both named in the trace), the float64 reference session agrees on the greedy tokens, kimi-linear gives one
# rank's tokens under engine.ep, layer split and tp + ep, and an unknown architecture is refused
# with the supported list.
# Usage: mla_models_cli_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$(realpath "$1")"
. "$(dirname "$0")/testlib.sh"
cd "$T"

expect 0 "$RECUR" model new ds.gguf --arch deepseek2 --dim 64 --layers 2 --heads 2 --vocab 400 --context 64 \
  --kv-lora-rank 32 --qk-nope 32 --qk-rope 16 --v-head-dim 32 --experts 4 --experts-used 2 --ffn 32 \
  --q-lora-rank 32 --gating sigmoid --yarn-factor 4 --dtype q8_0
expect 0 "$RECUR" model inspect ds.gguf
contains "$T/out" "deepseek2.attention.kv_lora_rank"
contains "$T/out" "blk.0.attn_k_b.weight"
contains "$T/out" "blk.1.exp_probs_b.bias"

expect 0 "$RECUR" generate -m ds.gguf -p "hello" -n 6 --threads 1 --json --trace ds.json
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert len(j["tokens"])>0, j' "$T/out" ||
  fail "deepseek2 generate --json: $(cat "$T/out")"
grep -q '"name":"mla_decode"' ds.json || fail "no mla_decode zone in the trace"
grep -q '"variant":"blocked_' ds.json || fail "the default MLA variant is not named blocked_<isa> in the trace"
fast=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"])' "$T/out")
expect 0 "$RECUR" generate -m ds.gguf -p "hello" -n 6 --threads 1 --json --set kernel.mla_decode.variant=expand \
  --set kernel.mla_prefill.variant=expand --trace ex.json
grep -q '"variant":"expand"' ex.json || fail "kernel.mla_decode.variant=expand is not named in the trace"
expect 0 "$RECUR" generate -m ds.gguf -p "hello" -n 6 --threads 1 --json --set engine.numerics=f64_reference \
  --set kernel.gemm.q8_0_activations=f32
ref=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"])' "$T/out")
expect 0 "$RECUR" generate -m ds.gguf -p "hello" -n 6 --threads 1 --json --set kernel.gemm.q8_0_activations=f32
exact=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"])' "$T/out")
[ "$ref" = "$exact" ] || fail "greedy tokens: engine $exact, float64 reference $ref (default run: $fast)"

# --unsplit-kv-b: the older form llama.cpp c392e50 reads (attn_kv_b; key/value lengths per head,
# head_count_kv = heads, no *_mla keys; yarn_log_multiplier even without YaRN), and recur runs it.
expect 0 "$RECUR" model new dsu.gguf --arch deepseek2 --dim 64 --layers 2 --heads 2 --vocab 400 --context 64 \
  --kv-lora-rank 64 --qk-nope 32 --qk-rope 16 --v-head-dim 32 --experts 4 --experts-used 2 --ffn 32 \
  --q-lora-rank 32 --unsplit-kv-b
expect 0 "$RECUR" model inspect --json dsu.gguf
/usr/bin/python3 -c '
import json, sys
j = json.load(open(sys.argv[1])); m = j["metadata"]; names = str(j)
want = {"deepseek2.attention.key_length": 48, "deepseek2.attention.value_length": 32,
        "deepseek2.attention.head_count_kv": 2, "deepseek2.rope.scaling.yarn_log_multiplier": 0}
got = {k: m.get(k) for k in want}
assert got == want and "deepseek2.attention.key_length_mla" not in m, got
assert "blk.0.attn_kv_b.weight" in names and "blk.0.attn_k_b.weight" not in names
' "$T/out" || fail "--unsplit-kv-b keys: $(head -c 600 "$T/out")"
expect 0 "$RECUR" generate -m dsu.gguf -p "hello" -n 4 --threads 1 --json

expect 0 "$RECUR" model new kl.gguf --arch kimi-linear --dim 64 --layers 4 --heads 2 --vocab 400 --context 64 \
  --pattern kkka --kda-head-dim 32 --kv-lora-rank 32 --qk-nope 32 --qk-rope 16 --v-head-dim 32 --experts 4 \
  --experts-used 2 --ffn 32
expect 0 "$RECUR" model inspect kl.gguf
contains "$T/out" "kimi-linear.attention.head_count_kv"
contains "$T/out" "blk.0.ssm_f_a.weight"
expect 0 "$RECUR" generate -m kl.gguf -p "hello" -n 6 --threads 1 --json
kl=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"])' "$T/out")
# The hybrid's parallel layouts on kimi-linear: expert parallelism (its sigmoid gating), layer
# split of the MLA layer, both with tp: the same greedy tokens as one rank.
for layout in "engine.ep=2" "engine.tp=2 engine.layer_split=on" "engine.tp=2 engine.ep=2"; do
  set --
  for knob in $layout; do set -- "$@" --set "$knob"; done
  expect 0 "$RECUR" "$@" generate -m kl.gguf -p "hello" -n 6 --threads 1 --json
  got=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"])' "$T/out")
  [ "$got" = "$kl" ] || fail "kimi-linear at $layout: $got, one rank $kl"
done

# Another architecture: refused, naming it and what runs.
/usr/bin/python3 - <<'PY' || fail "could not write the qwen9 file"
import struct
def s(x): b = x.encode(); return struct.pack('<Q', len(b)) + b
with open('q.gguf', 'wb') as f:
    f.write(b'GGUF' + struct.pack('<IQQ', 3, 0, 1) + s('general.architecture') + struct.pack('<I', 8) + s('qwen9'))
PY
expect 1 "$RECUR" generate -m q.gguf -p "hello" -n 2
contains "$T/err" "qwen9"
contains "$T/err" "deepseek2"
contains "$T/err" "kimi-linear"

finish mla_models_cli_test
