// Token sampling: greedy (temperature 0), or temperature + nucleus (top-p), seeded.
// A Sampler owns its RNG; one per sequence, used by one thread.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/tokenizer.h"

namespace recur {

struct SamplerOptions {
  float temperature = 0.0f;  // 0 = greedy (argmax, lowest id on ties)
  float top_p = 1.0f;        // keep the smallest set of tokens whose probability reaches top_p
  uint64_t seed = 0;

  Status validate() const;
};

class Sampler {
 public:
  explicit Sampler(const SamplerOptions& options) : options_(options), rng_(options.seed) {}
  TokenId sample(std::span<const float> logits);

 private:
  SamplerOptions options_;
  std::mt19937_64 rng_;
  std::vector<std::pair<float, TokenId>> scratch_;
};

TokenId argmax(std::span<const float> logits);

}  // namespace recur
