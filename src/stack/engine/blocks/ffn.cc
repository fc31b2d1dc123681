// The dense FFN block (SwiGLU) and the FFN arithmetic the MoE experts share.
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/convert.h"

#include "engine/blocks/block.h"
#include "kernels/ggml_arith/ggml_arith.h"
#include "kernels/layer/layer.h"
#include "trace/trace.h"

namespace recur {

float gelu_tanh(float x) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + 0.044715f * x * x)));
}

float gelu_fp16_table(float x) {
  // ggml's table: one fp16 result per fp16 input, built once (the 64 Ki entries take ~2 ms).
  // ggml-cpu.c is C built with FMA, so GCC contracts 1 + a x x into fma(a x, x, 1): with that
  // contraction every entry equals libggml-cpu.so's (c392e50, read from the loaded library);
  // without it one (x = -1.999) differs.
  static const std::vector<uint16_t> table = [] {
    constexpr float kSqrt2OverPi = 0.7978845608028654f;
    std::vector<uint16_t> t(65536);
    for (size_t i = 0; i < t.size(); ++i) {
      const float v = fp16_to_fp32(uint16_t(i));
      t[i] = fp32_to_fp16(0.5f * v * (1.0f + std::tanh(kSqrt2OverPi * v * std::fma(0.044715f * v, v, 1.0f))));
    }
    return t;
  }();
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return fp16_to_fp32(table[fp32_to_fp16(x)]);
}

// SwiGLU through the registered layer kernel at the variant of kernel.swiglu.variant (registered and checked against float64; element-wise,
// so a row's bits do not depend on its chunk): std::exp per element cost ~3 ms a layer at 128
// rows.
void ffn_rows(const Step& s, const FfnShard& f, const float* x, int64_t m, float* out, int tap_layer) {
  float* a = s.r.ff_a.data();
  float* b = s.r.ff_b.data();
  const int64_t n = f.gate.rows();  // a TP shard's columns, or a whole expert's under EP
  const ProjectionOut gate_up[] = {{&f.gate, a}, {&f.up, b}};
  project_rows(s, x, m, gate_up);
  // The tapped layer's own width: deepseek2's and kimi-linear's leading dense layers are wider
  // than ffn_dim (each expert's); this rank's columns of it: whole when the ranks replicate it
  // (or layer split gives it whole to one rank), else its engine.tp shard.
  const int64_t whole = tap_layer >= 0 ? s.m.layers[size_t(tap_layer)].w_gate.rows : n;
  const Span cols = n == whole ? Span{0, whole} : rank_span(whole, s.o.tp, s.r.w.index);
  if (tap_layer >= 0) {
    s.tap(Op::kFfnGate, tap_layer, a, n, cols.begin, whole);
    s.tap(Op::kFfnUp, tap_layer, b, n, cols.begin, whole);
  }
  if (s.c().ffn_gelu) {
    // Gemma's GELU (tanh approximation, as ggml_gelu) of the gate times up, element-wise.
    RECUR_ZONE("geglu");
    zone.arg("rows", m);
    const bool table = s.o.gelu == GeluForm::kFp16Table;
    zone.arg("gelu", table ? "fp16_table" : "tanh");
    for_rows(s.intra, m, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0 * n; i < i1 * n; ++i) a[i] = (table ? gelu_fp16_table(a[i]) : gelu_tanh(a[i])) * b[i];
    });
  } else if (s.o.ggml) {
    // ggml_silu over each row of the gate (its columns' place in the whole row picks the vector exp
    // or expf), then ggml_mul by up.
    RECUR_ZONE("swiglu");
    zone.arg("variant", "ggml");
    zone.arg("rows", m);
    for_rows(s.intra, m, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) ggml_arith::silu_span(*s.o.ggml, whole, cols.begin, n, a + i * n, a + i * n);
      for (int64_t i = i0 * n; i < i1 * n; ++i) a[i] *= b[i];
    });
  } else {
    const KernelChoice& k = s.o.kernels.swiglu;
    RECUR_ZONE("swiglu");
    zone.arg("variant", k.variant.data());
    zone.arg("rows", m);
    const kernels::LayerOps& ops = kernels::layer_ops(k.isa);
    for_rows(s.intra, m,
             [&](int64_t i0, int64_t i1) { kernels::swiglu(a + i0 * n, b + i0 * n, a + i0 * n, (i1 - i0) * n, ops); });
  }
  if (tap_layer >= 0) s.tap(Op::kFfnAct, tap_layer, a, n, cols.begin, whole);
  f.down.apply(a, m, out, s.intra);
}

void dense_ffn(const Step& s, int l) {
  RECUR_ZONE("mlp");
  ffn_rows(s, s.r.w.layers[size_t(l)].dense, s.r.h.data(), s.rows(), s.r.partial.data(), l);
  s.tap(Op::kFfnDown, l, s.r.partial.data(), s.c().dim);
}

}  // namespace recur
