// MoE gating (block.h route_rows): the hybrid's softmax top-k through the registered
// route_topk kernel; deepseek2's through route_topk when the layer has no selection bias (then
// scaled), else here: scores s = sigmoid or softmax of the logits, the k largest s + bias chosen
// (ties -> lower expert), weighted by their s, renormalized when moe_renormalize, times
// expert_weights_scale (llama.cpp's build_moe_ffn). Under engine.ggml_arithmetic every gating
// runs as ggml computes it (ggml_arith::moe_route: ggml's softmax or sigmoid, the selection on
// the probabilities in ggml_argsort's order, the renormalizing sum in double).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "engine/blocks/block.h"
#include "kernels/ggml_arith/ggml_moe.h"
#include "kernels/layer/layer.h"
#include "trace/trace.h"

namespace recur {

namespace {

Status route_biased(const Step& s, const float* bias, int32_t* ids, float* weights) {
  const ModelConfig& c = s.c();
  const int64_t E = c.n_experts, k = c.n_experts_used;
  std::vector<float> score(static_cast<size_t>(E)), chosen(static_cast<size_t>(E));
  std::vector<int32_t> order(static_cast<size_t>(E));
  for (int64_t i = 0; i < s.rows(); ++i) {
    const float* x = s.r.router.data() + i * E;
    if (c.expert_gating == ExpertGating::kSigmoid) {
      for (int64_t e = 0; e < E; ++e) score[size_t(e)] = 1.0f / (1.0f + std::exp(-x[e]));
    } else {
      const float mx = *std::max_element(x, x + E);
      float sum = 0;
      for (int64_t e = 0; e < E; ++e) sum += (score[size_t(e)] = std::exp(x[e] - mx));
      for (float& v : score) v /= sum;
    }
    for (int64_t e = 0; e < E; ++e) chosen[size_t(e)] = score[size_t(e)] + bias[e];
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return chosen[size_t(a)] > chosen[size_t(b)]; });
    float total = 0;
    for (int64_t j = 0; j < k; ++j) total += score[size_t(order[size_t(j)])];
    for (int64_t j = 0; j < k; ++j) {
      const int32_t e = order[size_t(j)];
      ids[i * k + j] = e;
      const float w = c.moe_renormalize ? score[size_t(e)] / total : score[size_t(e)];
      weights[i * k + j] = w * c.expert_weights_scale;
    }
  }
  return ok_status();
}

Status route_ggml(const Step& s, const float* bias, int32_t* ids, float* weights) {
  const ModelConfig& c = s.c();
  const int64_t E = c.n_experts, k = c.n_experts_used;
  const ggml_arith::MoeRouting routing{
      .gate = c.expert_gating == ExpertGating::kSigmoid ? ggml_arith::MoeGate::kSigmoid : ggml_arith::MoeGate::kSoftmax,
      .experts = E, .k = k, .bias = bias, .renormalize = c.moe_renormalize, .scale = c.expert_weights_scale};
  std::vector<float> probs(static_cast<size_t>(2 * E));
  for (int64_t i = 0; i < s.rows(); ++i)
    ggml_arith::moe_route(*s.o.ggml, routing, s.r.router.data() + i * E, probs.data(), ids + i * k, weights + i * k);
  return ok_status();
}

}  // namespace

Status route_rows(const Step& s, int l, int32_t* ids, float* weights) {
  const ModelConfig& c = s.c();
  const Weight& bias = s.m.layers[size_t(l)].exp_probs_b;
  std::vector<float> b;
  if (bias.data != nullptr) {
    b.resize(static_cast<size_t>(c.n_experts));
    bias.dequantize_row(0, b.data());
  }
  if (s.o.ggml) {
    RECUR_ZONE("route_ggml");
    zone.arg("rows", s.rows());
    return route_ggml(s, b.empty() ? nullptr : b.data(), ids, weights);
  }
  if (bias.data != nullptr) {
    RECUR_ZONE("route_biased");
    zone.arg("rows", s.rows());
    return route_biased(s, b.data(), ids, weights);
  }
  // The registered route_topk (one variant): softmax or sigmoid, the k largest, renormalized or not.
  RECUR_ZONE("route_topk");
  zone.arg("variant", s.o.kernels.route_topk.variant.data());
  zone.arg("rows", s.rows());
  const auto score = c.expert_gating == ExpertGating::kSigmoid ? kernels::RouteScore::kSigmoid
                                                               : kernels::RouteScore::kSoftmax;
  RECUR_RETURN_IF_ERROR(kernels::route_topk(s.r.router.data(), s.rows(), c.n_experts, c.n_experts_used, score,
                                            c.moe_renormalize, ids, weights));
  if (c.expert_weights_scale != 1.0f)
    for (int64_t i = 0; i < s.rows() * c.n_experts_used; ++i) weights[i] *= c.expert_weights_scale;
  return ok_status();
}

}  // namespace recur
