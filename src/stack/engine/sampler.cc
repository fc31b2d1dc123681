#include "engine/sampler.h"

#include <cmath>

#include "kernels/layer/layer.h"
#include "trace/trace.h"

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
  RECUR_ZONE("sample");
  zone.arg("variant", kernel_.variant.data());
  zone.arg("vocab", int64_t(logits.size()));
  // Greedy draws nothing, so a seed's stream is only consumed by sampled tokens.
  const kernels::SampleParams p{.temperature = options_.temperature, .top_p = options_.top_p,
                                .seed = options_.temperature > 0.0f ? rng_() : 0};
  int32_t token = 0;
  // The only failures are parameters validate() refuses and an empty vocabulary.
  if (Status s = kernels::sample(logits.data(), 1, int64_t(logits.size()), p, &token); !s) return argmax(logits);
  return TokenId(token);
}

}  // namespace recur
