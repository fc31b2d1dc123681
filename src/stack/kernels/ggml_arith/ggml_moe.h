// llm_build_moe_ffn's routing in ggml's arithmetic (engine.ggml_arithmetic): the probabilities,
// the top-k as ggml_argsort orders them (ties included), and the experts' weights.
#pragma once

#include <cstdint>

#include "kernels/ggml_arith/ggml_arith.h"

namespace recur::ggml_arith {

// ggml_argsort's descending order (c392e50's CPU op): an exchange sort of the indices, position
// j swapping with each later k whose value is strictly larger. Not stable: ties can leave index
// order (e.g. {1, 2, 2, 3} -> 3, 2, 1, 0).
void argsort_desc(int64_t n, const float* x, int32_t* order);

enum class MoeGate : uint8_t { kSoftmax, kSigmoid };

struct MoeRouting {
  MoeGate gate = MoeGate::kSoftmax;
  int64_t experts = 0, k = 0;    // 1 <= k <= experts
  const float* bias = nullptr;   // exp_probs_b (deepseek V3): added to the probabilities for the selection only
  bool renormalize = false;      // norm_w: weights / their sum (ggml_sum_rows: summed in double, rounded)
  float scale = 1.0f;            // scale_w's factor (ggml_scale; 1 is exact)
};

// One token: probs = soft_max_row(logits, scale 1, no mask) or sigmoid_row(logits); ids = the
// first k of argsort_desc(probs + bias); weights = probs[ids], renormalized, times scale.
// probs is scratch of `experts` floats (the bias sum too, when given: 2 * experts).
void moe_route(GgmlIsa isa, const MoeRouting& r, const float* logits, float* probs, int32_t* ids, float* weights);

// One token's combine: y[dim] = out_0 w_0, then y = y + out_j w_j for j = 1 .. k-1 (ggml_mul by
// the weights, then the views added in selection order). outs: [k, dim] in selection order.
void moe_combine(int64_t k, int64_t dim, const float* outs, const float* weights, float* y);

// qwen2moe's shared-expert gate from its logit g (build_qwen2moe): ggml_div(ggml_silu(g), g), the
// silu of one element through ggml_vec_silu_f32's scalar tail. Not 1 / (1 + exp(-g))'s bits.
float silu_gate(GgmlIsa isa, float g);

}  // namespace recur::ggml_arith
