// Small model configurations the engine's tests share (header-only, tests only).
#pragma once

#include "engine/model_config.h"

namespace recur::testing {

// A 3-layer llama, dim 64: 4 heads on 2 KV heads of 16, FFN 96, vocab 400, context 64.
inline ModelConfig tiny_llama_config() {
  ModelConfig c;
  c.arch = Arch::kLlama;
  c.dim = 64;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.ffn_dim = 96;
  c.vocab = 400;
  c.context = 64;
  return c;
}

// A 4-layer hybrid ("kkka"), dim 64: 4 KDA value heads on 2 key heads of 16, 4 attention heads
// on 2 KV heads of 16, FFN 64 (or `experts` experts, top-2, plus a shared one), vocab 400.
inline ModelConfig tiny_hybrid_config(int experts) {
  ModelConfig c;
  c.arch = Arch::kHybrid;
  c.dim = 64;
  c.n_layers = 4;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.ffn_dim = 64;
  c.vocab = 400;
  c.context = 64;
  c.layer_pattern = "kkka";
  c.kda_heads = 4;
  c.kda_key_heads = 2;
  c.kda_head_dim = 16;
  c.conv_size = 4;
  c.n_experts = experts;
  c.n_experts_used = experts ? 2 : 0;
  c.shared_expert = experts > 0;
  return c;
}

// A 4-layer qwen3next (interval 4: "kkka"), dim 64: gated DeltaNet 4 value heads on 2 key heads
// of 16, attention 4 heads on 2 KV heads of 16 with 4 dims rotated, 4 experts (top 2) of 32 and a
// shared expert of 64, vocab 400, context 64.
inline ModelConfig tiny_qwen3next_config() {
  ModelConfig c = tiny_hybrid_config(4);
  c.arch = Arch::kQwen3Next;
  c.partial_rotary = c.attn_output_gate = c.kda_scalar_decay = c.kda_gate_silu = true;  // its row's features
  c.rope_neox = c.qk_norm = c.moe_renormalize = c.shared_expert = c.shared_expert_gate = true;
  c.rope_dims = 4;
  c.ffn_dim = 32;
  c.shared_ffn_dim = 64;
  return c;
}

// qwen3next at interval 2 over 3 layers (DeltaNet, attention, DeltaNet), dim 96: one KV head of 32
// with 8 dims rotated, DeltaNet 2 value heads on 1 key head of 32, 3 conv taps, 6 experts (top 3)
// of 64 and a shared expert of 32.
inline ModelConfig tiny_qwen3next_interval2_config() {
  ModelConfig c = tiny_qwen3next_config();
  c.dim = 96;
  c.n_layers = 3;
  c.n_heads = 2;
  c.n_kv_heads = 1;
  c.head_dim = 32;
  c.rope_dims = 8;
  c.layer_pattern = "ka";
  c.kda_heads = 2;
  c.kda_key_heads = 1;
  c.kda_head_dim = 32;
  c.conv_size = 3;
  c.n_experts = 6;
  c.n_experts_used = 3;
  c.ffn_dim = 64;
  c.shared_ffn_dim = 32;
  return c;
}

}  // namespace recur::testing
