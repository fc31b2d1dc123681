// ModelConfig: the hyperparameters of a model, read from GGUF metadata or a Hugging Face
// config.json, and written back to GGUF.
//
// The architectures are rows of one table (architectures.h): llama.cpp's `general.architecture`
// names with their `{arch}.*` keys (llama, qwen2, qwen3, qwen2moe, qwen3moe, phi3, gemma2, gemma3,
// deepseek2, kimi-linear, qwen3next) and recur's own "hybrid" (hybrid.*: KDA linear-attention layers and
// full-attention layers in a pattern, each followed by a dense SwiGLU or MoE MLP). deepseek2 adds
// MLA attention, leading dense layers and MoE with shared experts and biased gating
// (deepseek2_config.h); kimi-linear has KDA layers and MLA layers without RoPE in the pattern
// head_count_kv gives per layer (0 = KDA), with deepseek2's MoE (kimi_linear.h); qwen3next has gated
// DeltaNet layers (KDA with one decay per head) and gated full-attention layers (qwen3next.h). An architecture
// is a set of the feature flags below, which the shared blocks obey.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/gguf.h"

namespace recur {

enum class Arch {
  kLlama, kHybrid, kQwen2, kQwen3, kQwen2Moe, kQwen3Moe, kPhi3, kGemma2, kDeepseek2, kKimiLinear, kQwen3Next, kGemma3
};
enum class ExpertGating : uint8_t { kSoftmax = 1, kSigmoid = 2 };  // llama.cpp's expert_gating_func values
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
  bool moe_renormalize = true;     // the top-k probabilities divided by their sum (deepseek2: expert_weights_norm)
  bool shared_expert_gate = false; // shared expert output times sigmoid(ffn_gate_inp_shexp . x) (qwen2moe)
  int shared_ffn_dim = 0;          // shared expert width; 0: ffn_dim
  int rope_dims = 0;               // {arch}.rope.dimension_count as read (0: absent); loaders refuse partial rotary
                                   // but qwen3next's (partial_rotary: the first rope_dims of each head rotate)
  bool partial_rotary = false;     // RoPE on the first rope_dims of each head only (qwen3next)
  bool attn_output_gate = false;   // attn_q holds [q_h ; gate_h] per head; out_h *= sigmoid(gate_h) (qwen3next)
  bool kda_scalar_decay = false;   // gated DeltaNet: one decay logit and dt_bias per value head, not per channel (qwen3next)
  bool kda_gate_silu = false;      // the KDA gated norm multiplies by silu(gate), not sigmoid(gate) (qwen3next)
  bool scale_embeddings = false;   // embedding rows times sqrt(dim) (gemma)
  bool ffn_gelu = false;           // GELU (tanh) gated FFN instead of SiLU (gemma)
  bool post_norms = false;         // sandwich norms: post_attention_norm / post_ffw_norm on each block's output (gemma2)
  float attn_softcap = 0;          // attention scores cap * tanh(s / cap) (gemma2); 0: none
  float final_softcap = 0;         // logits cap * tanh(l / cap) (gemma2; gemma3 when the file has the key); 0: none
  float attn_scale = 0;            // softmax scale; 0: 1 / sqrt(head_dim)
  int sliding_window = 0;          // {arch}.attention.sliding_window of the sliding layers (0: none): a
                                   // query at p attends to keys in (p - window, p] (AttentionOptions::window)
  int sliding_window_pattern = 0;  // layers slide in groups of N, the last of each global (gemma2 2, gemma3 6)
  float rope_local_theta = 0;      // RoPE base of the sliding layers, unscaled (gemma3: 10000); 0: the global one
  // MLA attention (deepseek2: kv_lora_rank > 0; kernels/mla/mla.h, docs/engine.md "MLA").
  // head_dim is then qk_nope_dim + qk_rope_dim (llama.cpp's key_length_mla).
  int q_lora_rank = 0;   // 0: attn_q; else attn_q_a -> RMSNorm attn_q_a_norm -> attn_q_b
  int kv_lora_rank = 0;  // the compressed latent each token caches
  int qk_nope_dim = 0;   // per head: q and k parts without RoPE
  int qk_rope_dim = 0;   // per head: RoPE'd q part; the RoPE'd key part is one, shared by every head
  int v_head_dim = 0;
  bool mla_rope = true;  // kimi-linear's MLA layers apply no RoPE to their rope part
  // deepseek2's older file form, the one llama.cpp c392e50 reads (its converter's before the MLA
  // cache): one unsplit attn_kv_b per layer, key_length / value_length per head (nope + rope, v),
  // head_count_kv = heads and no *_mla keys. false: attn_k_b / attn_v_b with the latent keys.
  bool mla_unsplit_kv_b = false;
  // YaRN (rope.scaling.type yarn): factor > 1 with the original context, DeepSeek's mscale
  // through yarn_log_multiplier (0.1 * mscale_all_dim).
  float rope_yarn_factor = 1;
  int rope_original_context = 0;
  float rope_yarn_log_mul = 0, rope_yarn_beta_fast = 32, rope_yarn_beta_slow = 1;
  // MoE as deepseek2 routes it: layers [0, leading_dense_layers) have a dense FFN of
  // dense_ffn_dim (ffn_dim is each expert's width); the shared expert is shared_ffn_dim wide
  // (deepseek2's expert_shared_count x ffn_dim); scores softmax or sigmoid, chosen by score +
  // exp_probs_b when the layer has that bias, weighted by the unbiased score, renormalized when
  // moe_renormalize, times expert_weights_scale. The other rows keep softmax and scale 1.
  int leading_dense_layers = 0;
  int dense_ffn_dim = 0;
  ExpertGating expert_gating = ExpertGating::kSoftmax;
  float expert_weights_scale = 1;

  int shared_width() const { return shared_ffn_dim > 0 ? shared_ffn_dim : ffn_dim; }
  // The dims of each head RoPE rotates: rope_dims with partial_rotary, else the whole head.
  int rotary_dims() const { return partial_rotary && rope_dims > 0 ? rope_dims : head_dim; }

  bool is_mla() const { return kv_lora_rank > 0; }
  // Layer i has a dense FFN (no experts, or one of deepseek2's leading dense layers).
  bool is_dense_ffn_layer(int layer) const { return n_experts == 0 || layer < leading_dense_layers; }
  // The widest FFN hidden row any layer computes (dense, an expert, or the shared expert).
  int max_ffn_width() const;

  // Layer i is KDA (hybrid) or attention.
  bool is_kda_layer(int layer) const;
  // Layer i attends within sliding_window: i % pattern < pattern - 1, as llama.cpp's set_swa_pattern
  // (gemma2: the even layers; gemma3: five of each six).
  bool is_sliding_layer(int layer) const {
    return sliding_window > 0 && sliding_window_pattern > 0 && layer % sliding_window_pattern < sliding_window_pattern - 1;
  }
  // The sliding layers rotate by RoPE tables of their own (rope_local_theta, no scaling).
  bool has_local_rope() const { return rope_local_theta > 0 && sliding_window > 0; }
  // Checks that every size is positive and consistent (heads divide dim, pattern length, ...).
  Status validate() const;

  static Result<ModelConfig> from_gguf(const gguf::File& file);
  void to_gguf(gguf::Writer& writer) const;
  // A Hugging Face config.json of any row of hf_config.h's table (read_hf_config).
  static Result<ModelConfig> from_hf_config(std::string_view json_text, std::string_view source);
};

}  // namespace recur
