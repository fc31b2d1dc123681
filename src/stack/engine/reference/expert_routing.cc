#include "engine/reference/expert_routing.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace recur {

std::vector<std::pair<int, double>> route_experts(const ModelConfig& c, const std::vector<double>& logits,
                                                  const std::vector<double>* bias) {
  const int E = c.n_experts;
  std::vector<double> score(static_cast<size_t>(E));
  if (c.expert_gating == ExpertGating::kSigmoid) {
    for (int e = 0; e < E; ++e) score[size_t(e)] = 1 / (1 + std::exp(-logits[size_t(e)]));
  } else {
    const double mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0;
    for (int e = 0; e < E; ++e) sum += (score[size_t(e)] = std::exp(logits[size_t(e)] - mx));
    for (double& s : score) s /= sum;
  }
  std::vector<double> chosen = score;
  if (bias != nullptr)
    for (int e = 0; e < E; ++e) chosen[size_t(e)] += (*bias)[size_t(e)];
  std::vector<int> order(static_cast<size_t>(E));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return chosen[size_t(a)] > chosen[size_t(b)]; });
  double total = 0;
  for (int j = 0; j < c.n_experts_used; ++j) total += score[size_t(order[size_t(j)])];
  std::vector<std::pair<int, double>> out;
  for (int j = 0; j < c.n_experts_used; ++j) {
    const int e = order[size_t(j)];
    out.emplace_back(e, (c.moe_renormalize ? score[size_t(e)] / total : score[size_t(e)]) * c.expert_weights_scale);
  }
  return out;
}

}  // namespace recur
