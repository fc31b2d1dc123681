// Binding a layer's attention and FFN tensors (llama.cpp's GGUF names) into LayerWeights, as the
// config's feature flags say (model_config.h): what every architecture's loader shares.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "engine/expert_weights.h"  // bind_experts
#include "engine/gguf.h"
#include "engine/model_config.h"
#include "engine/transformer.h"

namespace recur {

// Binds one layer's tensors `prefix` + name ("blk.3." + "attn_q.weight") into weights, with
// bind_weight's shape checks and errors: the loaders' one way to read a layer.
class LayerTensors {
 public:
  LayerTensors(const gguf::File& file, const std::string& prefix) : file_(file), prefix_(prefix) {}
  Status operator()(Weight& w, const char* name, int64_t rows, int64_t cols) const;

 private:
  const gguf::File& file_;
  const std::string& prefix_;
};

// attn_q/k/v/output (or phi3's fused attn_qkv), their biases (attn_bias) and the per-head
// attn_q_norm / attn_k_norm (qk_norm) of the layer whose tensors start with `prefix` ("blk.3.").
Status bind_attention_weights(const gguf::File& f, const ModelConfig& c, const std::string& prefix, LayerWeights& L);
// Layer `layer`'s FFN: ffn_gate/up/down (or phi3's fused gate+up in ffn_up; deepseek2's leading
// dense layers are dense_ffn_dim wide), or the router ffn_gate_inp with the optional
// exp_probs_b selection bias (deepseek2), the experts ffn_{gate,up,down}_exps and the shared
// expert ffn_{gate,up,down}_shexp with its gate ffn_gate_inp_shexp (shared_expert_gate).
Status bind_ffn_weights(const gguf::File& f, const ModelConfig& c, const std::string& prefix, int layer,
                        LayerWeights& L);

}  // namespace recur
