#!/bin/sh
# End-to-end: `recur model new --arch` writes llama.cpp-layout files that `recur generate` and
# `recur serve` run (greedy tokens of the native forward equal the float64 reference's, qwen3next
# included, and a
# served greedy completion equals generate's text); an unknown architecture is refused naming
# it and the supported list.
# Usage: architectures_cli_test.sh /path/to/recur SOURCE_DIR
set -u
RECUR="$1"
. "$(dirname "$0")/serve_port.sh"
T="$(mktemp -d)"
export RECUR_CACHE_DIR="$T"
SERVER=""
cleanup() { [ -n "$SERVER" ] && kill -9 "$SERVER" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; [ -f "$T/serve.err" ] && { echo "--- server stderr:" >&2; cat "$T/serve.err" >&2; }; exit 1; }
tokens() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tokens"])' "$1"; }

# gemma2 and gemma3 with a window of 4: the prompt and 8 generated tokens run past it (gemma3 has
# 6 layers: five sliding, one global with its own RoPE base).
for arch in llama qwen2 qwen3 qwen2moe qwen3moe phi3 gemma2 gemma3; do
  extra="" layers=2
  case $arch in
    gemma2) extra="--sliding-window 4" ;;
    gemma3) extra="--sliding-window 4" layers=6 ;;
  esac
  # shellcheck disable=SC2086  # extra is a list of flags
  "$RECUR" model new "$T/$arch.gguf" --arch "$arch" --dim 64 --layers $layers --heads 4 --kv-heads 2 --ffn 64 \
    --vocab 400 --context 256 --dtype f16 $extra >/dev/null 2>&1 || fail "model new --arch $arch"
  "$RECUR" generate -m "$T/$arch.gguf" -p "hello world" -n 8 --threads 1 --json \
    --set kernel.gemm.f16_activations=f32 > "$T/$arch.native.json" 2>"$T/gen.err" || fail "generate $arch: $(cat "$T/gen.err")"
  "$RECUR" generate -m "$T/$arch.gguf" -p "hello world" -n 8 --threads 1 --json \
    --set engine.numerics=f64_reference > "$T/$arch.f64.json" 2>"$T/gen.err" || fail "generate f64 $arch: $(cat "$T/gen.err")"
  [ "$(tokens "$T/$arch.native.json")" = "$(tokens "$T/$arch.f64.json")" ] \
    || fail "$arch: native tokens $(tokens "$T/$arch.native.json") vs float64 $(tokens "$T/$arch.f64.json")"
done

# qwen3next: gated DeltaNet + gated attention + MoE (3 DeltaNet layers, then attention), Q8_0.
"$RECUR" model new "$T/qwen3next.gguf" --arch qwen3next --dim 64 --layers 4 --heads 4 --kv-heads 2 --ffn 32 \
  --kda-heads 4 --kda-key-heads 2 --kda-head-dim 16 --shared-ffn 64 --vocab 400 --context 256 --dtype q8_0 >/dev/null 2>&1 \
  || fail "model new --arch qwen3next"
"$RECUR" generate -m "$T/qwen3next.gguf" -p "hello world" -n 8 --threads 1 --json \
  --set kernel.gemm.q8_0_activations=f32 > "$T/qwen3next.native.json" 2>"$T/gen.err" || fail "generate qwen3next: $(cat "$T/gen.err")"
"$RECUR" generate -m "$T/qwen3next.gguf" -p "hello world" -n 8 --threads 1 --json \
  --set engine.numerics=f64_reference > "$T/qwen3next.f64.json" 2>"$T/gen.err" || fail "generate f64 qwen3next: $(cat "$T/gen.err")"
[ "$(tokens "$T/qwen3next.native.json")" = "$(tokens "$T/qwen3next.f64.json")" ] \
  || fail "qwen3next: native tokens $(tokens "$T/qwen3next.native.json") vs float64 $(tokens "$T/qwen3next.f64.json")"
if "$RECUR" model new "$T/bad.gguf" --arch qwen3next --pattern kak 2> "$T/bad.err"; then fail "qwen3next --pattern kak accepted"; fi
grep -q "qwen3next's layer pattern 'kak' must be k repeated then one a" "$T/bad.err" \
  || fail "qwen3next pattern message: $(cat "$T/bad.err")"

# serve: a greedy completion on a qwen2moe, a phi3, a gemma2, a gemma3 and a qwen3next file equals generate's text.
for arch in qwen2moe phi3 gemma2 gemma3 qwen3next; do served_text_equals_generate "$T/$arch.gguf" "$T/$arch.gguf" "$arch"; done

# An architecture recur does not run: the same bytes with 'llama' spelled 'mamba' everywhere.
perl -pe 's/llama/mamba/g' "$T/llama.gguf" > "$T/mamba.gguf"
if "$RECUR" generate -m "$T/mamba.gguf" -n 2 > /dev/null 2> "$T/mamba.err"; then fail "mamba file ran"; fi
grep -q "mamba.gguf: architecture 'mamba' is not supported (recur runs llama, qwen2, qwen3, qwen2moe, qwen3moe" "$T/mamba.err" \
  || fail "mamba message: $(cat "$T/mamba.err")"
# model new refuses flags the architecture has no place for (a reader would silently drop them).
if "$RECUR" model new "$T/bad.gguf" --arch qwen2 --experts 4 2> "$T/bad.err"; then fail "qwen2 --experts accepted"; fi
grep -q -- "--experts: qwen2 is dense" "$T/bad.err" || fail "qwen2 --experts message: $(cat "$T/bad.err")"
if "$RECUR" model new "$T/bad.gguf" --arch qwen3moe --shared-expert 2> "$T/bad.err"; then fail "qwen3moe --shared-expert accepted"; fi
grep -q -- "--shared-expert: qwen3moe has no shared expert" "$T/bad.err" || fail "shared expert message: $(cat "$T/bad.err")"
if "$RECUR" model new "$T/bad.gguf" --arch qwen2 --sliding-window 8 2> "$T/bad.err"; then fail "qwen2 --sliding-window accepted"; fi
grep -q -- "--sliding-window: qwen2 has no sliding layers" "$T/bad.err" || fail "sliding window message: $(cat "$T/bad.err")"
echo "architectures_cli_test: ok"
