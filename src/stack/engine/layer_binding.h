// Binding a layer's attention and FFN tensors (llama.cpp's GGUF names) into LayerWeights, as the
// config's feature flags say (model_config.h): what every architecture's loader shares.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "engine/gguf.h"
#include "engine/model_config.h"
#include "engine/transformer.h"

namespace recur {

// Expert e of a 3-d tensor {cols, rows, experts} as a 2-d Weight, for each e.
Result<std::vector<Weight>> bind_experts(const gguf::File& f, const std::string& name, int experts, int64_t rows,
                                         int64_t cols);
// attn_q/k/v/output (or phi3's fused attn_qkv), their biases (attn_bias) and the per-head
// attn_q_norm / attn_k_norm (qk_norm) of the layer whose tensors start with `prefix` ("blk.3.").
Status bind_attention_weights(const gguf::File& f, const ModelConfig& c, const std::string& prefix, LayerWeights& L);
// ffn_gate/up/down (or phi3's fused gate+up in ffn_up), or the router ffn_gate_inp, the
// experts ffn_{gate,up,down}_exps and the shared expert ffn_{gate,up,down}_shexp with its gate
// ffn_gate_inp_shexp (shared_expert_gate).
Status bind_ffn_weights(const gguf::File& f, const ModelConfig& c, const std::string& prefix, LayerWeights& L);

}  // namespace recur
