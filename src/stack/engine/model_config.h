// ModelConfig: the hyperparameters of a model, read from GGUF metadata or a Hugging Face
// config.json, and written back to GGUF.
//
// Architectures: "llama" (GGUF's standard keys, llama.*), "hybrid" (recur's own keys,
// hybrid.*): KDA linear-attention layers and full-attention layers in a pattern, each followed by
// a dense SwiGLU or MoE MLP; and "deepseek2" (llama.cpp's keys, deepseek2_config.cc): MLA
// attention, leading dense layers, then MoE with shared experts and biased gating; and
// "kimi-linear" (llama.cpp's keys, kimi_linear.h): KDA layers and MLA layers without RoPE in the
// pattern head_count_kv gives per layer (0 = KDA), deepseek2's MoE.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/gguf.h"

namespace recur {

enum class Arch { kLlama, kHybrid, kDeepseek2, kKimiLinear };
enum class ExpertGating : uint8_t { kSoftmax = 1, kSigmoid = 2 };  // llama.cpp's expert_gating_func values
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

  // MLA attention (deepseek2: kv_lora_rank > 0; kernels/mla/mla.h, docs/engine.md "MLA").
  // head_dim is then qk_nope_dim + qk_rope_dim (llama.cpp's key_length_mla).
  int q_lora_rank = 0;   // 0: attn_q; else attn_q_a -> RMSNorm attn_q_a_norm -> attn_q_b
  int kv_lora_rank = 0;  // the compressed latent each token caches
  int qk_nope_dim = 0;   // per head: q and k parts without RoPE
  int qk_rope_dim = 0;   // per head: RoPE'd q part; the RoPE'd key part is one, shared by every head
  int v_head_dim = 0;
  bool mla_rope = true;  // kimi-linear's MLA layers apply no RoPE to their rope part
  // YaRN (rope.scaling.type yarn): factor > 1 with the original context, DeepSeek's mscale
  // through yarn_log_multiplier (0.1 * mscale_all_dim).
  float rope_yarn_factor = 1;
  int rope_original_context = 0;
  float rope_yarn_log_mul = 0, rope_yarn_beta_fast = 32, rope_yarn_beta_slow = 1;
  // MoE as deepseek2 routes it: layers [0, leading_dense_layers) have a dense FFN of
  // dense_ffn_dim (ffn_dim is each expert's width); n_shared_experts experts' worth of shared
  // expert; scores softmax or sigmoid, chosen by score + exp_probs_b when the layer has that
  // bias, weighted by the unbiased score, renormalized when expert_weights_norm, times
  // expert_weights_scale. The hybrid keeps softmax, renormalized, scale 1.
  int leading_dense_layers = 0;
  int dense_ffn_dim = 0;
  int n_shared_experts = 0;
  ExpertGating expert_gating = ExpertGating::kSoftmax;
  bool expert_weights_norm = true;
  float expert_weights_scale = 1;

  bool is_mla() const { return kv_lora_rank > 0; }
  // Layer i has a dense FFN (no experts, or one of deepseek2's leading dense layers).
  bool is_dense_ffn_layer(int layer) const { return n_experts == 0 || layer < leading_dense_layers; }
  // The widest FFN hidden row any layer computes (dense, an expert, or the shared expert).
  int max_ffn_width() const;

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
