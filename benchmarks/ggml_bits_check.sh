#!/usr/bin/env bash
# recur's llama.cpp-parity arithmetic against libggml-cpu.so itself, bit for bit (issue #27;
# docs/engine.md "ggml's arithmetic in recur"): Q8_0 activations, Q8_0 dots in ggml's order, the
# GELU table, and every ggml_arith function (engine.ggml_arithmetic) against ggml's own ops run as
# graphs (RMSNorm, RoPE, SiLU, sigmoid, softmax, F16/F32 mul_mat, the attention core), for the ISA
# the library was built for (the line "ggml build ISA: ..." says which: avx512 or avx2).
#
#   benchmarks/ggml_bits_check.sh LLAMA_CPP_BIN_DIR [BUILD_DIR=build]
#
# LLAMA_CPP_BIN_DIR holds a llama.cpp CPU build's libggml-cpu.so and libggml-base.so (built by you,
# outside this repository). Without them the script says so and exits 0. It exits 1 when any output
# differs. The GELU table is a local symbol: its offset (and ggml_cpu_init's) come from the
# library's symbol table (nm).
set -euo pipefail
bin=${1:?usage: ggml_bits_check.sh LLAMA_CPP_BIN_DIR [BUILD_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$root/build}
so=$bin/libggml-cpu.so
[ -f "$so" ] && [ -f "$bin/libggml-base.so" ] || { echo "skip: no libggml-cpu.so and libggml-base.so in $bin"; exit 0; }
[ -x "$build/benchmarks/ggml_bits_check" ] || { echo "$build: build the ggml_bits_check target first" >&2; exit 2; }
offset() { nm "$so" 2>/dev/null | awk -v s="$1" '$3 == s && !found { print $1; found = 1 }' || true; }
init=$(offset ggml_cpu_init)
table=$(offset ggml_table_gelu_f16)
if [ -n "$init" ] && [ -n "$table" ]; then
  exec "$build/benchmarks/ggml_bits_check" "$so" "$init" "$table"
fi
echo "note: $so has no symbol table entry for ggml_table_gelu_f16 (stripped?): the GELU table is not checked"
exec "$build/benchmarks/ggml_bits_check" "$so"
