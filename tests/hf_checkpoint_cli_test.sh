#!/bin/sh
# End-to-end: `recur model new --hf DIR` writes a random-weight model both as GGUF and as a
# Hugging Face directory (config.json, safetensors shards, tokenizer.json) of the same weights,
# and `recur generate` gives the same greedy tokens and text from either, for every Hugging Face
# row (docs/engine.md "Hugging Face checkpoints"); bad directories are refused with the file,
# the key or tensor named, and a non-zero exit; gemma3 and qwen3next also through `recur serve`;
# gemma3 also as released (Gemma3ForConditionalGeneration, both tensor prefixes).
# Usage: hf_checkpoint_cli_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$1"
. "$(dirname "$0")/serve_port.sh"
T="$(mktemp -d)"
export RECUR_CACHE_DIR="$T"
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill -9 "$SERVER" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$T/serve.err" ] && { echo "--- server stderr:" >&2; cat "$T/serve.err" >&2; }; exit 1; }
field() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

DENSE="--dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 64 --vocab 400 --context 128"
MLA="--dim 64 --layers 4 --heads 2 --vocab 400 --context 128 --kv-lora-rank 32 --qk-nope 32 --qk-rope 16 \
--v-head-dim 32 --experts 4 --experts-used 2 --ffn 32"
# gemma3: 6 layers (five sliding with a window of 4 that prompt and generation run past, one
# global); qwen3next: 3 DeltaNet layers (4 value heads on 2 key heads) and one gated attention.
GEMMA3="--dim 64 --layers 6 --heads 4 --kv-heads 2 --ffn 64 --vocab 400 --context 128 --sliding-window 4"
QWEN3NEXT="--dim 64 --layers 4 --heads 4 --kv-heads 2 --ffn 32 --kda-heads 4 --kda-key-heads 2 --kda-head-dim 16 \
--shared-ffn 64 --vocab 400 --context 128"
i=0
for spec in "llama --llama3-rope" "qwen2" "qwen3" "qwen2moe" "qwen3moe" "phi3" "gemma2" \
            "deepseek2 --gating sigmoid --q-lora-rank 32 --leading-dense 1" "kimi-linear --pattern kkak --kda-head-dim 32" \
            "gemma3" "qwen3next" \
            "gemma3 --hf-multimodal model.language_model" "gemma3 --hf-multimodal language_model.model"; do
  i=$((i + 1))
  arch="${spec%% *}"
  case "$arch" in
    deepseek2|kimi-linear) shape="$MLA" ;;
    gemma3) shape="$GEMMA3" ;;
    qwen3next) shape="$QWEN3NEXT" ;;
    *) shape="$DENSE" ;;
  esac
  dtype=bf16; [ $((i % 2)) -eq 0 ] && dtype=f16
  # shellcheck disable=SC2086
  "$RECUR" model new "$T/$i.gguf" --arch $spec $shape --dtype "$dtype" --hf "$T/hf$i" --hf-shards $((i % 3 + 1)) \
    >/dev/null 2>"$T/new.err" || fail "model new $spec --hf: $(cat "$T/new.err")"
  for m in "$T/$i.gguf" "$T/hf$i"; do
    "$RECUR" generate -m "$m" -p "hello world" -n 8 --threads 1 --json --set kernel.gemm.f16_activations=f32 \
      > "$m.json" 2>"$T/gen.err" || fail "generate $arch from $m: $(cat "$T/gen.err")"
  done
  [ "$(field "$T/$i.gguf.json" tokens)" = "$(field "$T/hf$i.json" tokens)" ] \
    || fail "$arch: GGUF tokens $(field "$T/$i.gguf.json" tokens) vs Hugging Face $(field "$T/hf$i.json" tokens)"
  [ "$(field "$T/$i.gguf.json" prompt_ids)" = "$(field "$T/hf$i.json" prompt_ids)" ] || fail "$arch: prompt ids differ"
  [ "$(field "$T/$i.gguf.json" text)" = "$(field "$T/hf$i.json" text)" ] || fail "$arch: texts differ"
done
# Gemma 3 as released (Gemma3ForConditionalGeneration, specs 12 and 13): the vision tensors are
# skipped, and the load says so once.
"$RECUR" generate -m "$T/hf13" -p hi -n 1 --threads 1 >/dev/null 2>"$T/gen.err" || fail "generate hf13: $(cat "$T/gen.err")"
[ "$(grep -c "Gemma3ForConditionalGeneration: skipped 2 vision tower / projector tensors" "$T/gen.err")" = 1 ] \
  || fail "hf13: no single note of the skipped vision tensors: $(cat "$T/gen.err")"
grep -q '"language_model.model.layers.0.self_attn.q_proj.weight"' "$T/hf13/model.safetensors.index.json" \
  || fail "hf13: not in transformers 4.50's layout"

# serve: a greedy completion from the qwen2moe, gemma3 and qwen3next directories equals generate's
# text from the GGUF file.
for i in 4 10 11; do served_text_equals_generate "$T/hf$i" "$T/$i.gguf" "hf$i"; done

# Refusals: each names what is wrong, with a non-zero exit and no crash.
refused() {  # refused DIR "expected text" what
  "$RECUR" generate -m "$1" -p hi -n 2 --threads 1 >/dev/null 2>"$T/err"
  rc=$?
  [ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "$3: exit $rc"
  grep -qF -- "$2" "$T/err" || fail "$3: message lacks '$2': $(cat "$T/err")"
}
fresh() { rm -rf "$T/bad"; cp -r "$T/hf2" "$T/bad"; }
fresh; sed -i 's/"Qwen2ForCausalLM"/"FalconForCausalLM"/' "$T/bad/config.json"
refused "$T/bad" "architecture 'FalconForCausalLM' is not supported (recur reads Hugging Face checkpoints of LlamaForCausalLM" "unknown architecture"
fresh; sed -i '/"hidden_size"/d' "$T/bad/config.json"
refused "$T/bad" "config.json: missing 'hidden_size'" "missing key"
fresh; printf '{"weight_map": {"lm_head.weight": "/etc/passwd"}}' > "$T/bad/model.safetensors.index.json"
refused "$T/bad" "not a .safetensors file name in the model directory" "bad index"
fresh; shard="$(ls "$T/bad"/model-*.safetensors | tail -1)"
truncate -s -64 "$shard"
refused "$T/bad" "truncated file?" "truncated shard"
fresh; rm "$T/bad/tokenizer.json"
refused "$T/bad" "tokenizer.json: no such file" "missing tokenizer"
rm -rf "$T/bad"; cp -r "$T/hf11" "$T/bad"
/usr/bin/python3 - "$T/bad/config.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["layer_types"][1] = "full_attention"
json.dump(c, open(sys.argv[1], "w"))
PY
refused "$T/bad" "layer_types[1] is \"full_attention\", expected 'linear_attention'" "qwen3next layer_types"
rm -rf "$T/bad"; cp -r "$T/hf12" "$T/bad"
sed -i 's/"text_config": {/"text_config": 7, "unused": {/' "$T/bad/config.json"
refused "$T/bad" "config.json: 'text_config' must be an object holding the text model's settings" "gemma3 text_config"
echo "hf_checkpoint_cli_test: ok"
