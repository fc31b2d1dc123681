#!/usr/bin/env bash
# recur's KDA core against ggml's GATED_DELTA_NET (KDA mode) on the same inputs (issue #27):
# builds benchmarks/kda_vs_ggml_gdn.cc against a ggml checkout built outside this repository and
# recur's kernel libraries, then runs it.
#
#   benchmarks/kda_vs_ggml_gdn.sh GGML_DIR [TOLERANCE=1e-4] [BUILD_DIR=build]
#
# GGML_DIR: a ggml source tree with a CPU build in GGML_DIR/build (one that has
# ggml_gated_delta_net, e.g. ggml-org/ggml from 2026: `cmake -B build -DCMAKE_BUILD_TYPE=Release
# && cmake --build build --target ggml ggml-cpu`). `-` prints "skip" and exits 0. Prints one line
# per shape and recur path (every prefill and decode variant) with the largest output and
# final-state error relative to the largest magnitude, and exits 1 on any above the tolerance.
set -euo pipefail
ggml=${1:?usage: kda_vs_ggml_gdn.sh GGML_DIR [TOLERANCE] [BUILD_DIR]}
tol=${2:-1e-4}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${3:-$root/build}
[ "$ggml" = - ] && { echo "skip: no ggml build given"; exit 0; }
[ -f "$ggml/include/ggml.h" ] || { echo "$ggml: no include/ggml.h (expected a ggml source tree)" >&2; exit 2; }
grep -q ggml_gated_delta_net "$ggml/include/ggml.h" ||
  { echo "$ggml: this ggml has no ggml_gated_delta_net (too old)" >&2; exit 2; }
libdir=$(dirname "$(find "$ggml/build" -name 'libggml.so' -o -name 'libggml.a' | head -1)")
[ -n "$libdir" ] || { echo "$ggml/build: no libggml (build the ggml and ggml-cpu targets)" >&2; exit 2; }
[ -f "$build/src/stack/kernels/kda/librecur_kernels_kda.a" ] ||
  { echo "$build: build recur first (make build)" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags=$(grep -o -- '-m[a-z0-9-]*' "$build/compile_commands.json" | sort -u | grep -E 'avx|fma|f16c' | tr '\n' ' ' || true)
g++ -std=c++23 -O2 $flags -I"$ggml/include" -I"$root/src/stack" -I"$root/src/base" -I"$build/generated" \
  "$root/benchmarks/kda_vs_ggml_gdn.cc" -o "$out/kda_vs_ggml_gdn" \
  "$build/src/stack/kernels/kda/librecur_kernels_kda.a" "$build/src/base/trace/librecur_trace.a" \
  "$build/src/base/core/librecur_core.a" -L"$libdir" $(find "$ggml/build" -name 'libggml*.so' -printf '-L%h ' | sort -u) \
  -lggml -lggml-cpu -lggml-base -lfmt -lpthread -Wl,-rpath,"$libdir" \
  $(find "$ggml/build" -name 'libggml*.so' -printf '-Wl,-rpath,%h ' | sort -u)
"$out/kda_vs_ggml_gdn" "$tol"
