// A float64 forward pass of deepseek2 (deepseek2.h) and kimi-linear (kimi_linear.h: its KDA
// layers too), written from DeepSeek-V2's and Kimi-Linear's modeling code:
// MLA in its unabsorbed form (every cached latent decompressed per head,
// kernels/mla/mla_reference.h), YaRN RoPE and mscale in double, the dense and MoE FFNs with
// deepseek2's gating, over weights of any storage type widened exactly to double. Slow on
// purpose; for small models: knob engine.numerics=f64_reference makes such a session run
// it, and deepseek2_test and kimi_linear_test check the fp32 engine against it. One sequence, one thread.
#pragma once

#include <memory>

#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/model_config.h"

namespace recur {

// A Session over the reference: logits rounded to float at the end.
std::unique_ptr<Session> new_mla_reference_session(const gguf::File& file, const ModelConfig& config, int max_tokens);

}  // namespace recur
