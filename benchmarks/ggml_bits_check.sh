#!/usr/bin/env bash
# recur's llama.cpp-parity arithmetic (Q8_0 activations, Q8_0 dots in ggml's order, the GELU table)
# against libggml-cpu.so itself, bit for bit (issue #27; docs/engine.md "Interoperability with
# llama.cpp").
#
#   benchmarks/ggml_bits_check.sh LLAMA_CPP_BIN_DIR [BUILD_DIR=build]
#
# LLAMA_CPP_BIN_DIR holds a llama.cpp CPU build's libggml-cpu.so (built by you, outside this
# repository). Without it the script says so and exits 0. The GELU table is a local symbol: its
# offset (and ggml_cpu_init's) come from the library's symbol table (nm).
set -euo pipefail
bin=${1:?usage: ggml_bits_check.sh LLAMA_CPP_BIN_DIR [BUILD_DIR]}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${2:-$root/build}
so=$bin/libggml-cpu.so
[ -f "$so" ] || { echo "skip: no libggml-cpu.so in $bin"; exit 0; }
[ -x "$build/benchmarks/ggml_bits_check" ] || { echo "$build: build the ggml_bits_check target first" >&2; exit 2; }
offset() { nm "$so" 2>/dev/null | awk -v s="$1" '$3 == s && !found { print $1; found = 1 }' || true; }
init=$(offset ggml_cpu_init)
table=$(offset ggml_table_gelu_f16)
if [ -n "$init" ] && [ -n "$table" ]; then
  exec "$build/benchmarks/ggml_bits_check" "$so" "$init" "$table"
fi
echo "note: $so has no symbol table entry for ggml_table_gelu_f16 (stripped?): the GELU table is not checked"
exec "$build/benchmarks/ggml_bits_check" "$so"
