// The float64 references' MoE routing (hybrid_reference.h, mla_reference.h), llama.cpp's
// build_moe_ffn: scores softmax or sigmoid of the router logits (expert_gating), the k largest
// score + bias chosen (bias: deepseek2's exp_probs_b, else none; ties -> the lower expert),
// each weighted by its score, divided by the chosen scores' sum when moe_renormalize, times
// expert_weights_scale.
#pragma once

#include <utility>
#include <vector>

#include "engine/model_config.h"

namespace recur {

// (expert, weight) for the config's n_experts_used experts, in choice order.
std::vector<std::pair<int, double>> route_experts(const ModelConfig& c, const std::vector<double>& logits,
                                                  const std::vector<double>* bias);

}  // namespace recur
