#include "engine/architectures.h"

#include <array>
#include <cmath>

#include <fmt/format.h>

#include "engine/deepseek2.h"
#include "engine/deepseek2_config.h"
#include "engine/gemma3.h"
#include "engine/hybrid.h"
#include "engine/kimi_linear.h"
#include "engine/llama.h"
#include "engine/qwen3next.h"

namespace recur {

Status ArchKeys::get(std::string_view key, int& out) const {
  RECUR_ASSIGN_OR_RETURN(int64_t v, f_.get_int(prefix_ + std::string(key)));
  out = int(v);
  return ok_status();
}

Status ArchKeys::get_opt(std::string_view key, int& out) const { return has(key) ? get(key, out) : ok_status(); }

Status ArchKeys::get_opt(std::string_view key, float& out) const {
  if (!has(key)) return ok_status();
  RECUR_ASSIGN_OR_RETURN(double v, f_.get_float(prefix_ + std::string(key)));
  out = float(v);
  return ok_status();
}

Status ArchKeys::get_opt(std::string_view key, std::string& out) const {
  if (!has(key)) return ok_status();
  RECUR_ASSIGN_OR_RETURN(out, f_.get_string(prefix_ + std::string(key)));
  return ok_status();
}

namespace {

template <class M>
Result<std::unique_ptr<Model>> load_as(gguf::File file, const ModelLoadOptions& options) {
  RECUR_ASSIGN_OR_RETURN(auto m, M::from_file(std::move(file), options));
  return std::unique_ptr<Model>(std::move(m));
}

void no_features(ModelConfig&) {}
Status no_keys(const ArchKeys&, ModelConfig&) { return ok_status(); }
void write_no_keys(const ModelConfig&, gguf::Writer&) {}

std::string key_prefix(const ModelConfig& c) { return std::string(arch_name(c.arch)) + "."; }

void qwen2_features(ModelConfig& c) {
  c.rope_neox = true;
  c.attn_bias = true;
}
void qwen3_features(ModelConfig& c) {
  c.rope_neox = true;
  c.qk_norm = true;
}
// Qwen2-MoE: softmax over every expert, the top-k probabilities as they are (norm_topk_prob
// false), plus a shared expert scaled by a sigmoid gate.
void qwen2moe_features(ModelConfig& c) {
  qwen2_features(c);
  c.moe_renormalize = false;
  c.shared_expert = true;
  c.shared_expert_gate = true;
}
// Qwen3-MoE: the top-k probabilities renormalised, no shared expert.
void qwen3moe_features(ModelConfig& c) {
  qwen3_features(c);
  c.moe_renormalize = true;
}
void phi3_features(ModelConfig& c) {
  c.rope_neox = true;
  c.fused_qkv = true;
  c.fused_gate_up = true;
}

// Gemma 2: embeddings times sqrt(dim), GELU-gated FFN, sandwich norms, soft-capped attention
// scores (50) and logits (30), NeoX RoPE, a sliding window (4096) on even layers, the LM head
// tied to the embedding (llama.cpp duplicates token_embd whatever the file holds).
void gemma2_features(ModelConfig& c) {
  c.rope_neox = true;
  c.scale_embeddings = true;
  c.ffn_gelu = true;
  c.post_norms = true;
  c.attn_softcap = 50.0f;
  c.final_softcap = 30.0f;
  c.sliding_window = 4096;
  c.sliding_window_pattern = 2;  // llama.cpp c392e50: il % 2 == 0 slides
  c.tied_embeddings = true;
}

// llama.cpp c392e50's query scale: 1 / sqrt(key_length), but 1 / sqrt(dim / heads) for the 27B
// (46 layers; gemma_pytorch's query_pre_attn_scalar).
Status gemma2_keys(const ArchKeys& k, ModelConfig& c) {
  RECUR_RETURN_IF_ERROR(k.get_opt("attn_logit_softcapping", c.attn_softcap));
  RECUR_RETURN_IF_ERROR(k.get_opt("final_logit_softcapping", c.final_softcap));
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.sliding_window", c.sliding_window));
  c.tied_embeddings = true;
  if (c.n_layers == 46 && c.n_heads > 0) c.attn_scale = 1.0f / std::sqrt(float(c.dim / c.n_heads));
  return ok_status();
}

void write_gemma2_keys(const ModelConfig& c, gguf::Writer& w) {
  using gguf::Value;
  const std::string p = key_prefix(c);
  w.set(p + "attn_logit_softcapping", Value::of_f32(c.attn_softcap));
  w.set(p + "final_logit_softcapping", Value::of_f32(c.final_softcap));
  w.set(p + "attention.sliding_window", Value::of_u32(uint32_t(c.sliding_window)));
}

Status hybrid_keys(const ArchKeys& k, ModelConfig& c) {
  RECUR_RETURN_IF_ERROR(k.get_opt("layer_pattern", c.layer_pattern));  // validate() refuses none
  RECUR_RETURN_IF_ERROR(k.get("kda.head_count", c.kda_heads));
  c.kda_key_heads = c.kda_heads;
  RECUR_RETURN_IF_ERROR(k.get_opt("kda.key_head_count", c.kda_key_heads));
  RECUR_RETURN_IF_ERROR(k.get("kda.head_dim", c.kda_head_dim));
  RECUR_RETURN_IF_ERROR(k.get_opt("kda.conv_size", c.conv_size));
  RECUR_RETURN_IF_ERROR(k.get_opt("expert_count", c.n_experts));
  RECUR_RETURN_IF_ERROR(k.get_opt("expert_used_count", c.n_experts_used));
  int shared = 0;
  RECUR_RETURN_IF_ERROR(k.get_opt("expert_shared_count", shared));
  c.shared_expert = shared > 0;
  return ok_status();
}

void write_hybrid_keys(const ModelConfig& c, gguf::Writer& w) {
  using gguf::Value;
  const std::string p = key_prefix(c);
  w.set(p + "layer_pattern", Value::of_string(c.layer_pattern));
  w.set(p + "kda.head_count", Value::of_u32(uint32_t(c.kda_heads)));
  w.set(p + "kda.key_head_count", Value::of_u32(uint32_t(c.kda_key_heads)));
  w.set(p + "kda.head_dim", Value::of_u32(uint32_t(c.kda_head_dim)));
  w.set(p + "kda.conv_size", Value::of_u32(uint32_t(c.conv_size)));
  w.set(p + "expert_count", Value::of_u32(uint32_t(c.n_experts)));
  w.set(p + "expert_used_count", Value::of_u32(uint32_t(c.n_experts_used)));
  w.set(p + "expert_shared_count", Value::of_u32(c.shared_expert ? 1 : 0));
}

// Phi-3's sliding window (phi3.attention.sliding_window) is read and ignored, as llama.cpp
// does ("Phi SWA is currently disabled"): both attend to the whole context.
Status phi3_keys(const ArchKeys&, ModelConfig&) { return ok_status(); }
// llama.cpp before mid-2025 refuses a phi3 file without a sliding window (and applies it);
// newer llama.cpp ignores it, as recur does. The whole context keeps both the same.
void write_phi3_keys(const ModelConfig& c, gguf::Writer& w) {
  w.set(key_prefix(c) + "attention.sliding_window", gguf::Value::of_u32(uint32_t(c.context)));
}

// DeepSeek-V2: top-k weights as they are unless expert_weights_norm (V3 sets it).
void deepseek2_features(ModelConfig& c) { c.moe_renormalize = false; }
// Kimi-Linear: MLA layers without RoPE; llama.cpp's graph renormalizes its top-k always.
void kimi_linear_features(ModelConfig& c) {
  c.mla_rope = false;
  c.moe_renormalize = true;
}

// Qwen3-Next: gated DeltaNet layers (KDA with one decay per head, SiLU-gated norm) and gated
// full-attention layers (QK norm, partial NeoX RoPE, a sigmoid output gate) every
// full_attention_interval layers, each followed by Qwen2-MoE's FFN with the top-k renormalised.
void qwen3next_features(ModelConfig& c) {
  qwen3_features(c);
  c.partial_rotary = true;
  c.attn_output_gate = true;
  c.kda_scalar_decay = true;
  c.kda_gate_silu = true;
  c.moe_renormalize = true;
  c.shared_expert = true;
  c.shared_expert_gate = true;
}

const std::array<Architecture, 12> kArchitectures{{
    {"llama", Arch::kLlama, no_features, no_keys, write_no_keys, load_as<LlamaModel>},
    {"qwen2", Arch::kQwen2, qwen2_features, no_keys, write_no_keys, load_as<LlamaModel>},
    {"qwen3", Arch::kQwen3, qwen3_features, no_keys, write_no_keys, load_as<LlamaModel>},
    {"qwen2moe", Arch::kQwen2Moe, qwen2moe_features, read_moe_keys, write_moe_keys, load_as<LlamaModel>},
    {"qwen3moe", Arch::kQwen3Moe, qwen3moe_features, read_moe_keys, write_moe_keys, load_as<LlamaModel>},
    {"phi3", Arch::kPhi3, phi3_features, phi3_keys, write_phi3_keys, load_as<LlamaModel>},
    {"gemma2", Arch::kGemma2, gemma2_features, gemma2_keys, write_gemma2_keys, load_as<LlamaModel>},
    {"gemma3", Arch::kGemma3, gemma3_features, read_gemma3_keys, write_gemma3_keys, load_as<LlamaModel>},
    {"deepseek2", Arch::kDeepseek2, deepseek2_features, read_deepseek2_keys, write_deepseek2_keys,
     load_as<Deepseek2Model>, /*kda_layers=*/false, /*mla=*/true},
    {"kimi-linear", Arch::kKimiLinear, kimi_linear_features, read_kimi_linear_keys, write_kimi_linear_keys,
     load_as<KimiLinearModel>, /*kda_layers=*/true, /*mla=*/true},
    {"qwen3next", Arch::kQwen3Next, qwen3next_features, read_qwen3next_keys, write_qwen3next_keys,
     load_as<Qwen3NextModel>, /*kda_layers=*/true},
    {"hybrid", Arch::kHybrid, no_features, hybrid_keys, write_hybrid_keys, load_as<HybridModel>, /*kda_layers=*/true},
}};

}  // namespace

// The MoE keys llama.cpp's qwen2moe / qwen3moe read: the routed experts' width is
// expert_feed_forward_length (absent: feed_forward_length / expert_used_count); qwen2moe's
// shared expert is expert_shared_feed_forward_length wide (absent: feed_forward_length).
Status read_moe_keys(const ArchKeys& k, ModelConfig& c) {
  const int dense_ffn = c.ffn_dim;
  RECUR_RETURN_IF_ERROR(k.get("expert_count", c.n_experts));
  RECUR_RETURN_IF_ERROR(k.get("expert_used_count", c.n_experts_used));
  if (c.n_experts <= 0 || c.n_experts_used <= 0)
    return invalid_argument("{}: {} experts, {} used: a MoE architecture needs both positive", k.file().source(),
                            c.n_experts, c.n_experts_used);
  c.ffn_dim = dense_ffn / c.n_experts_used;
  RECUR_RETURN_IF_ERROR(k.get_opt("expert_feed_forward_length", c.ffn_dim));
  if (c.shared_expert) {
    c.shared_ffn_dim = dense_ffn;
    RECUR_RETURN_IF_ERROR(k.get_opt("expert_shared_feed_forward_length", c.shared_ffn_dim));
  }
  return ok_status();
}

void write_moe_keys(const ModelConfig& c, gguf::Writer& w) {
  using gguf::Value;
  const std::string p = key_prefix(c);
  w.set(p + "expert_count", Value::of_u32(uint32_t(c.n_experts)));
  w.set(p + "expert_used_count", Value::of_u32(uint32_t(c.n_experts_used)));
  w.set(p + "expert_feed_forward_length", Value::of_u32(uint32_t(c.ffn_dim)));
  if (c.shared_expert) w.set(p + "expert_shared_feed_forward_length", Value::of_u32(uint32_t(c.shared_width())));
}

std::span<const Architecture> architectures() { return kArchitectures; }

std::string supported_architectures() {
  std::string out;
  for (const Architecture& a : kArchitectures) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

Result<const Architecture*> find_architecture(std::string_view name, std::string_view source) {
  for (const Architecture& a : kArchitectures)
    if (a.name == name) return &a;
  return unsupported("{}: architecture '{}' is not supported (recur runs {})", source, name, supported_architectures());
}

const Architecture& architecture(Arch arch) {
  for (const Architecture& a : kArchitectures)
    if (a.arch == arch) return a;
  return kArchitectures[0];  // unreachable: every Arch has a row
}

std::string_view arch_name(Arch a) { return architecture(a).name; }

}  // namespace recur
