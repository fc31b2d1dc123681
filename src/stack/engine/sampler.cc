#include "engine/sampler.h"

#include <algorithm>
#include <cmath>

namespace recur {

Status SamplerOptions::validate() const {
  if (!(temperature >= 0.0f) || !std::isfinite(temperature)) return invalid_argument("temperature {} must be >= 0", temperature);
  if (!(top_p > 0.0f && top_p <= 1.0f)) return invalid_argument("top-p {} must be in (0, 1]", top_p);
  return ok_status();
}

TokenId argmax(std::span<const float> logits) {
  TokenId best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[size_t(best)]) best = TokenId(i);
  return best;
}

TokenId Sampler::sample(std::span<const float> logits) {
  if (options_.temperature == 0.0f) return argmax(logits);
  float max_logit = *std::max_element(logits.begin(), logits.end());
  scratch_.clear();
  double total = 0;
  for (size_t i = 0; i < logits.size(); ++i) {
    float p = std::exp((logits[i] - max_logit) / options_.temperature);
    scratch_.emplace_back(p, TokenId(i));
    total += p;
  }
  // Highest probability first, lowest id on ties, so a seed always gives the same tokens.
  std::sort(scratch_.begin(), scratch_.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  size_t keep = scratch_.size();
  if (options_.top_p < 1.0f) {
    double cumulative = 0;
    for (size_t i = 0; i < scratch_.size(); ++i) {
      cumulative += scratch_[i].first / total;
      if (cumulative >= options_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double kept_total = 0;
  for (size_t i = 0; i < keep; ++i) kept_total += scratch_[i].first;
  double r = std::uniform_real_distribution<double>(0.0, kept_total)(rng_);
  for (size_t i = 0; i < keep; ++i) {
    r -= scratch_[i].first;
    if (r <= 0) return scratch_[i].second;
  }
  return scratch_[keep - 1].second;
}

}  // namespace recur
