// ModelConfig: the hyperparameters of a model, read from GGUF metadata or a Hugging Face
// config.json, and written back to GGUF.
//
// Two architectures: "llama" (GGUF's standard keys, llama.*) and "hybrid" (recur's own keys,
// hybrid.*): KDA linear-attention layers and full-attention layers in a pattern, each followed by
// a dense SwiGLU or MoE MLP.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/gguf.h"

namespace recur {

enum class Arch { kLlama, kHybrid };
std::string_view arch_name(Arch a);

struct ModelConfig {
  Arch arch = Arch::kLlama;
  int dim = 0;             // embedding width
  int n_layers = 0;
  int n_heads = 0;         // attention query heads
  int n_kv_heads = 0;      // attention key/value heads (GQA)
  int head_dim = 0;        // dim / n_heads unless set
  int ffn_dim = 0;         // SwiGLU hidden width (per expert for MoE)
  int vocab = 0;
  int context = 4096;
  float rms_eps = 1e-5f;
  float rope_theta = 10000.f;
  bool tied_embeddings = false;

  // hybrid only
  std::string layer_pattern;  // one letter per layer: 'k' KDA, 'a' attention ("kkka" repeats)
  int kda_heads = 0;          // value heads of the KDA layers
  int kda_key_heads = 0;      // key heads (<= kda_heads, divides it)
  int kda_head_dim = 0;       // K = V per head
  int conv_size = 4;          // short causal convolution on q/k/v
  int n_experts = 0;          // 0 = dense MLP
  int n_experts_used = 0;     // top-k
  bool shared_expert = false;

  // Layer i is KDA (hybrid) or attention.
  bool is_kda_layer(int layer) const;
  // Checks that every size is positive and consistent (heads divide dim, pattern length, ...).
  Status validate() const;

  static Result<ModelConfig> from_gguf(const gguf::File& file);
  void to_gguf(gguf::Writer& writer) const;
  // A Hugging Face config.json for LlamaForCausalLM (or its relatives with the same keys).
  static Result<ModelConfig> from_hf_config(std::string_view json_text, std::string_view source);
};

}  // namespace recur
