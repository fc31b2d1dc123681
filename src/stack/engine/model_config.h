// ModelConfig: the hyperparameters of a model, read from GGUF metadata or a Hugging Face
// config.json, and written back to GGUF.
//
// The architectures are rows of one table (architectures.h): llama.cpp's `general.architecture`
// names with their `{arch}.*` keys (llama, qwen2, qwen3, qwen2moe, qwen3moe, phi3) and recur's
// own "hybrid" (hybrid.*: KDA linear-attention layers and full-attention layers in a pattern,
// each followed by a dense SwiGLU or MoE MLP). An architecture is a set of the feature flags
// below, which the shared blocks obey.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/gguf.h"

namespace recur {

enum class Arch { kLlama, kHybrid, kQwen2, kQwen3, kQwen2Moe, kQwen3Moe, kPhi3, kGemma2 };
std::string_view arch_name(Arch a);  // general.architecture (architectures.h)

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

  // Architecture features (architectures.h sets them per architecture; the blocks obey them).
  bool rope_neox = false;          // RoPE pairs (i, i + d/2) (NeoX), else GGUF llama's (2i, 2i + 1)
  float rope_freq_scale = 1.0f;    // linear RoPE scaling: angles times 1 / {arch}.rope.scaling.factor
  bool attn_bias = false;          // attn_{q,k,v}.bias added to the projections (qwen2)
  bool qk_norm = false;            // per-head RMSNorm attn_{q,k}_norm of q and k before RoPE (qwen3)
  bool fused_qkv = false;          // one attn_qkv tensor: q rows, then k, then v (phi3)
  bool fused_gate_up = false;      // ffn_up holds the gate rows, then the up rows (phi3)
  bool moe_renormalize = true;     // the top-k softmax probabilities divided by their sum
  bool shared_expert_gate = false; // shared expert output times sigmoid(ffn_gate_inp_shexp . x) (qwen2moe)
  int shared_ffn_dim = 0;          // shared expert width; 0: ffn_dim
  int rope_dims = 0;               // {arch}.rope.dimension_count as read (0: absent); loaders refuse partial rotary
  bool scale_embeddings = false;   // embedding rows times sqrt(dim) (gemma)
  bool ffn_gelu = false;           // GELU (tanh) gated FFN instead of SiLU (gemma)
  bool post_norms = false;         // sandwich norms: post_attention_norm / post_ffw_norm on each block's output (gemma2)
  float attn_softcap = 0;          // attention scores cap * tanh(s / cap) (gemma2); 0: none
  float final_softcap = 0;         // logits cap * tanh(l / cap) (gemma2); 0: none
  float attn_scale = 0;            // softmax scale; 0: 1 / sqrt(head_dim)
  int sliding_window = 0;          // {arch}.attention.sliding_window of the sliding layers (0: none);
                                   // sequences longer than it are refused (no windowed attention yet)
  int shared_width() const { return shared_ffn_dim > 0 ? shared_ffn_dim : ffn_dim; }

  // Layer i is KDA (hybrid) or attention.
  bool is_kda_layer(int layer) const;
  // Layer i attends within sliding_window (gemma2: the even layers, as llama.cpp).
  bool is_sliding_layer(int layer) const { return sliding_window > 0 && arch == Arch::kGemma2 && layer % 2 == 0; }
  // Checks that every size is positive and consistent (heads divide dim, pattern length, ...).
  Status validate() const;

  static Result<ModelConfig> from_gguf(const gguf::File& file);
  void to_gguf(gguf::Writer& writer) const;
  // A Hugging Face config.json for LlamaForCausalLM (or its relatives with the same keys).
  static Result<ModelConfig> from_hf_config(std::string_view json_text, std::string_view source);
};

}  // namespace recur
