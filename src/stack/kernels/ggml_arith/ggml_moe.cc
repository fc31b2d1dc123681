// ggml's MoE routing (ggml_moe.h).
#include "kernels/ggml_arith/ggml_moe.h"

#include <numeric>
#include <utility>
#include <vector>

namespace recur::ggml_arith {

void argsort_desc(int64_t n, const float* x, int32_t* order) {
  std::iota(order, order + n, 0);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t k = j + 1; k < n; ++k)
      if (x[order[j]] < x[order[k]]) std::swap(order[j], order[k]);
}

void moe_route(GgmlIsa isa, const MoeRouting& r, const float* logits, float* probs, int32_t* ids, float* weights) {
  const int64_t E = r.experts;
  if (r.gate == MoeGate::kSoftmax) soft_max_row(isa, E, probs, logits, 1.0f, nullptr);
  else sigmoid_row(E, probs, logits);
  const float* select = probs;
  if (r.bias != nullptr) {
    float* biased = probs + E;
    for (int64_t e = 0; e < E; ++e) biased[e] = probs[e] + r.bias[e];
    select = biased;
  }
  std::vector<int32_t> order(static_cast<size_t>(E));
  argsort_desc(E, select, order.data());
  for (int64_t j = 0; j < r.k; ++j) {
    ids[j] = order[size_t(j)];
    weights[j] = probs[order[size_t(j)]];
  }
  if (r.renormalize) {
    double sum = 0;
    for (int64_t j = 0; j < r.k; ++j) sum += double(weights[j]);
    const float total = float(sum);
    for (int64_t j = 0; j < r.k; ++j) weights[j] = weights[j] / total;
  }
  for (int64_t j = 0; j < r.k; ++j) weights[j] = weights[j] * r.scale;
}

void moe_combine(int64_t k, int64_t dim, const float* outs, const float* weights, float* y) {
  for (int64_t i = 0; i < dim; ++i) y[i] = outs[i] * weights[0];
  for (int64_t j = 1; j < k; ++j)
    for (int64_t i = 0; i < dim; ++i) y[i] = y[i] + outs[j * dim + i] * weights[j];
}

float silu_gate(GgmlIsa isa, float g) {
  float silu = 0;
  silu_row(isa, 1, &silu, &g);
  return silu / g;
}

}  // namespace recur::ggml_arith
