// Small deepseek2 and kimi-linear configurations (MLA) the engine's tests share, and a random-
// weight model of any configuration (header-only, GoogleTest tests only): deepseek2_test,
// mla_parallel_test, sequence_state_test.
#pragma once

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "engine/model.h"
#include "engine/model_config.h"
#include "engine/synthetic.h"

namespace recur::testing {

// Shape A: DeepSeek-V2-Lite's form (q direct, softmax, no renormalization, scale 1).
inline ModelConfig deepseek2_shape_a() {
  ModelConfig c;
  c.arch = Arch::kDeepseek2;
  c.dim = 64;
  c.n_layers = 3;
  c.n_heads = 4;
  c.n_kv_heads = 1;
  c.kv_lora_rank = 32;
  c.qk_nope_dim = 32;
  c.qk_rope_dim = 16;
  c.head_dim = 48;
  c.v_head_dim = 32;
  c.vocab = 400;
  c.context = 64;
  c.n_experts = 6;
  c.n_experts_used = 2;
  c.ffn_dim = 32;
  c.leading_dense_layers = 1;
  c.dense_ffn_dim = 96;
  c.shared_ffn_dim = 32;  // one expert wide
  c.shared_expert = true;
  c.moe_renormalize = false;
  return c;
}

// Shape B: DeepSeek-V3's form (low-rank q, sigmoid + selection bias, renormalized, scaled),
// YaRN with DeepSeek's mscale, two shared experts.
inline ModelConfig deepseek2_shape_b() {
  ModelConfig c = deepseek2_shape_a();
  c.dim = 96;
  c.n_layers = 3;
  c.n_heads = 3;
  c.q_lora_rank = 64;
  c.kv_lora_rank = 64;
  c.qk_rope_dim = 8;
  c.head_dim = 40;
  c.v_head_dim = 64;
  c.n_experts = 8;
  c.n_experts_used = 3;
  c.shared_ffn_dim = 2 * c.ffn_dim;  // two experts wide
  c.expert_gating = ExpertGating::kSigmoid;
  c.moe_renormalize = true;
  c.expert_weights_scale = 2.5f;
  c.rope_yarn_factor = 4;
  c.rope_original_context = 16;
  c.rope_yarn_log_mul = 0.0707f;
  return c;
}

// Kimi-Linear's form: KDA layers with low-rank gates and MLA layers without RoPE in a pattern,
// a leading dense layer, sigmoid gating with exp_probs_b, renormalized, scaled.
inline ModelConfig kimi_linear_config() {
  ModelConfig c = deepseek2_shape_a();
  c.arch = Arch::kKimiLinear;
  c.n_layers = 4;
  c.layer_pattern = "kkak";
  c.kda_head_dim = 32;
  c.kda_heads = c.kda_key_heads = c.n_heads;
  c.conv_size = 4;
  c.mla_rope = false;
  c.expert_gating = ExpertGating::kSigmoid;
  c.moe_renormalize = true;
  c.expert_weights_scale = 2.446f;
  return c;
}

// A random-weight f32 model of `c` (synthetic.h, `seed`) and the file bytes it views.
struct SyntheticTestModel {
  std::vector<std::byte> bytes;
  std::unique_ptr<Model> model;  // null (with a test failure) when it could not be made
};

inline SyntheticTestModel synthetic_test_model(const ModelConfig& c, uint64_t seed) {
  SyntheticTestModel t;
  auto w = synthetic_model({.config = c, .dtype = gguf::TensorType::kF32, .seed = seed});
  EXPECT_TRUE(w.has_value()) << (w ? "" : w.error().message());
  if (!w) return t;
  t.bytes = w->serialize();
  auto m = model_from_file(std::move(*gguf::parse(t.bytes, "synthetic_test_model.gguf")));
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  if (m) t.model = std::move(*m);
  return t;
}

}  // namespace recur::testing
