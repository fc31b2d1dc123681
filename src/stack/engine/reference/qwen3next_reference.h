// A float64 forward pass of qwen3next (qwen3next.h), written from Hugging Face's modeling code
// (transformers models/qwen3_next/modeling_qwen3_next.py: Qwen3NextGatedDeltaNet with its
// torch_recurrent_gated_delta_rule, Qwen3NextAttention, Qwen3NextSparseMoeBlock,
// Qwen3NextRMSNorm / Qwen3NextRMSNormGated) over a GGUF in llama.cpp's layout, read back through
// the converter's transforms (attn_qkv / attn_gate are in_proj_qkvz regrouped, ssm_a = -exp(A_log),
// norm weights = 1 + w). Its own code: none of the engine's blocks or kernels, weights of any
// storage type widened exactly to double, no threads. Slow on purpose; for small models:
// engine.numerics=f64_reference makes a session run it, and qwen3next_test checks the fp32
// engine against it. One sequence; used by one thread at a time.
#pragma once

#include <memory>

#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/model_config.h"

namespace recur {

// A Session over the reference: logits rounded to float at the end.
std::unique_ptr<Session> new_qwen3next_reference_session(const gguf::File& file, const ModelConfig& config,
                                                         int max_tokens);

}  // namespace recur
