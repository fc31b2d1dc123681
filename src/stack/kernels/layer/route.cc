// Top-k MoE routing: selection on the logits (exact, ties -> lower index), scores in fp32.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels/layer/layer.h"

namespace recur::kernels {

Status route_topk(const float* logits, int64_t tokens, int64_t experts, int64_t k, RouteScore score,
                  bool renormalize, int32_t* ids, float* weights) {
  if (experts < 1 || k < 1 || k > experts)
    return invalid_argument("route_topk: k={} must be in [1, experts={}]", k, experts);
  std::vector<int32_t> order(static_cast<size_t>(experts));
  for (int64_t t = 0; t < tokens; ++t) {
    const float* l = logits + t * experts;
    for (int64_t e = 0; e < experts; ++e) order[size_t(e)] = int32_t(e);
    // Both scores are monotone in the logit, so the top k by logit are the top k by score.
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [l](int32_t a, int32_t b) { return l[a] > l[b] || (l[a] == l[b] && a < b); });
    float denom = 1.0f;
    const float mx = l[order[0]];
    if (score == RouteScore::kSoftmax) {
      float sum = 0;
      for (int64_t e = 0; e < experts; ++e) sum += std::exp(l[e] - mx);
      denom = sum;
    }
    float* w = weights + t * k;
    float kept = 0;
    for (int64_t j = 0; j < k; ++j) {
      const float v = l[order[size_t(j)]];
      w[j] = score == RouteScore::kSoftmax ? std::exp(v - mx) / denom : 1.0f / (1.0f + std::exp(-v));
      ids[t * k + j] = order[size_t(j)];
      kept += w[j];
    }
    if (renormalize && kept > 0)
      for (int64_t j = 0; j < k; ++j) w[j] /= kept;
  }
  return ok_status();
}

}  // namespace recur::kernels
