// A float64 forward pass of deepseek2 (deepseek2.h), written from DeepSeek-V2's modeling code:
// MLA in its unabsorbed form (every cached latent decompressed per head,
// kernels/mla/mla_reference.h), YaRN RoPE and mscale in double, the dense and MoE FFNs with
// deepseek2's gating, over weights of any storage type widened exactly to double. Slow on
// purpose; for small models: knob engine.numerics=f64_reference makes a deepseek2 session run
// it, and deepseek2_test checks the fp32 engine against it. One sequence, one thread.
#pragma once

#include <memory>

#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/model_config.h"

namespace recur {

// A Session over the reference: logits rounded to float at the end.
std::unique_ptr<Session> new_mla_reference_session(const gguf::File& file, const ModelConfig& config, int max_tokens);

}  // namespace recur
