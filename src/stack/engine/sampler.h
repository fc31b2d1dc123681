// Token sampling: greedy (temperature 0), or temperature + nucleus (top-p), seeded, through the
// registered kernel `sample` (kernels/layer sample()) at the variant kernel.sample.variant names
// (engine_kernels.h resolve_kernel); each pick's "sample" zone names it. A Sampler owns its RNG
// (one 64-bit draw per sampled token seeds the kernel's walk); one per sequence, used by one thread.
#pragma once

#include <cstdint>
#include <random>
#include <span>

#include "core/status.h"
#include "engine/engine_kernels.h"
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
  Sampler(const SamplerOptions& options, const KernelChoice& kernel)
      : options_(options), kernel_(kernel), rng_(options.seed) {}
  TokenId sample(std::span<const float> logits);

 private:
  SamplerOptions options_;
  KernelChoice kernel_;
  std::mt19937_64 rng_;
};

TokenId argmax(std::span<const float> logits);

}  // namespace recur
