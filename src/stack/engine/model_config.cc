#include "engine/model_config.h"

#include <nlohmann/json.hpp>

#include "engine/architectures.h"

namespace recur {

bool ModelConfig::is_kda_layer(int layer) const {
  if (arch != Arch::kHybrid || layer_pattern.empty()) return false;
  return layer_pattern[size_t(layer) % layer_pattern.size()] == 'k';
}

Status ModelConfig::validate() const {
  auto positive = [](const char* what, int v) -> Status {
    if (v <= 0) return invalid_argument("model config: {} must be positive, got {}", what, v);
    return ok_status();
  };
  RECUR_RETURN_IF_ERROR(positive("dim", dim));
  RECUR_RETURN_IF_ERROR(positive("layers", n_layers));
  RECUR_RETURN_IF_ERROR(positive("heads", n_heads));
  RECUR_RETURN_IF_ERROR(positive("kv heads", n_kv_heads));
  RECUR_RETURN_IF_ERROR(positive("head dim", head_dim));
  RECUR_RETURN_IF_ERROR(positive("ffn dim", ffn_dim));
  RECUR_RETURN_IF_ERROR(positive("vocab", vocab));
  RECUR_RETURN_IF_ERROR(positive("context", context));
  if (n_heads % n_kv_heads != 0)
    return invalid_argument("model config: {} heads is not a multiple of {} kv heads", n_heads, n_kv_heads);
  if (head_dim % 2 != 0) return invalid_argument("model config: head dim {} must be even for RoPE", head_dim);
  if (n_experts < 0 || (n_experts > 0 && (n_experts_used <= 0 || n_experts_used > n_experts)))
    return invalid_argument("model config: top-{} of {} experts", n_experts_used, n_experts);
  if (shared_ffn_dim < 0) return invalid_argument("model config: shared expert width {} is negative", shared_ffn_dim);
  if (!(rope_freq_scale > 0)) return invalid_argument("model config: RoPE frequency scale {} must be > 0", rope_freq_scale);
  if (arch == Arch::kHybrid) {
    if (layer_pattern.empty() || layer_pattern.find_first_not_of("ka") != std::string::npos)
      return invalid_argument("model config: layer pattern '{}' must be letters k (KDA) and a (attention)", layer_pattern);
    RECUR_RETURN_IF_ERROR(positive("kda heads", kda_heads));
    RECUR_RETURN_IF_ERROR(positive("kda key heads", kda_key_heads));
    RECUR_RETURN_IF_ERROR(positive("kda head dim", kda_head_dim));
    RECUR_RETURN_IF_ERROR(positive("conv size", conv_size));
    if (kda_heads % kda_key_heads != 0)
      return invalid_argument("model config: {} KDA heads is not a multiple of {} key heads", kda_heads, kda_key_heads);
  }
  return ok_status();
}

Result<ModelConfig> ModelConfig::from_gguf(const gguf::File& f) {
  ModelConfig c;
  RECUR_ASSIGN_OR_RETURN(std::string name, f.get_string("general.architecture"));
  RECUR_ASSIGN_OR_RETURN(const Architecture* arch, find_architecture(name, f.source()));
  c.arch = arch->arch;
  arch->features(c);
  const ArchKeys k(f, name);
  RECUR_RETURN_IF_ERROR(k.get("embedding_length", c.dim));
  RECUR_RETURN_IF_ERROR(k.get("block_count", c.n_layers));
  RECUR_RETURN_IF_ERROR(k.get("feed_forward_length", c.ffn_dim));
  RECUR_RETURN_IF_ERROR(k.get("attention.head_count", c.n_heads));
  c.n_kv_heads = c.n_heads;
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.head_count_kv", c.n_kv_heads));
  RECUR_RETURN_IF_ERROR(k.get_opt("context_length", c.context));
  c.head_dim = c.n_heads > 0 ? c.dim / c.n_heads : 0;
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.key_length", c.head_dim));
  int value_length = c.head_dim;
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.value_length", value_length));
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.dimension_count", c.rope_dims));
  if (value_length != c.head_dim)
    return unsupported("{}: {}.attention.value_length {} differs from key_length {} (recur needs them equal)",
                       f.source(), name, value_length, c.head_dim);
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.layer_norm_rms_epsilon", c.rms_eps));
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.freq_base", c.rope_theta));
  // RoPE scaling: linear (angles times 1 / factor; llama.cpp's freq_scale) or none. Llama 3's
  // scaling is the rope_freqs.weight tensor instead (per-pair divisors, transformer.h).
  std::string scaling = "none";
  float factor = 1.0f;
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.scaling.type", scaling));
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.scale_linear", factor));
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.scaling.factor", factor));
  if (scaling == "linear" || (scaling == "none" && k.has("rope.scale_linear"))) {
    if (!(factor > 0)) return invalid_argument("{}: {}.rope.scaling.factor {} must be > 0", f.source(), name, factor);
    c.rope_freq_scale = 1.0f / factor;
  } else if (scaling != "none") {
    return unsupported("{}: {}.rope.scaling.type '{}' (recur runs none and linear; Llama 3 scaling is the "
                       "rope_freqs.weight tensor)",
                       f.source(), name, scaling);
  }
  if (k.has("vocab_size")) {
    RECUR_RETURN_IF_ERROR(k.get("vocab_size", c.vocab));
  } else if (const gguf::Value* tokens = f.find("tokenizer.ggml.tokens")) {
    c.vocab = int(tokens->items.size());
  } else if (const gguf::TensorInfo* emb = f.tensor("token_embd.weight"); emb && emb->dims.size() == 2) {
    c.vocab = int(emb->dims[1]);
  }
  c.tied_embeddings = f.tensor("output.weight") == nullptr;
  RECUR_RETURN_IF_ERROR(arch->read_keys(k, c));
  if (auto s = c.validate(); !s) return unexpected(s.error().with_context(f.source()));
  return c;
}

void ModelConfig::to_gguf(gguf::Writer& w) const {
  using gguf::Value;
  const std::string a(arch_name(arch));
  const std::string p = a + ".";
  w.set("general.architecture", Value::of_string(a));
  w.set(p + "embedding_length", Value::of_u32(uint32_t(dim)));
  w.set(p + "block_count", Value::of_u32(uint32_t(n_layers)));
  w.set(p + "feed_forward_length", Value::of_u32(uint32_t(ffn_dim)));
  w.set(p + "attention.head_count", Value::of_u32(uint32_t(n_heads)));
  w.set(p + "attention.head_count_kv", Value::of_u32(uint32_t(n_kv_heads)));
  w.set(p + "context_length", Value::of_u32(uint32_t(context)));
  w.set(p + "attention.layer_norm_rms_epsilon", Value::of_f32(rms_eps));
  w.set(p + "rope.freq_base", Value::of_f32(rope_theta));
  w.set(p + "rope.dimension_count", Value::of_u32(uint32_t(head_dim)));
  w.set(p + "vocab_size", Value::of_u32(uint32_t(vocab)));
  if (head_dim != dim / n_heads) {
    w.set(p + "attention.key_length", Value::of_u32(uint32_t(head_dim)));
    w.set(p + "attention.value_length", Value::of_u32(uint32_t(head_dim)));
  }
  if (rope_freq_scale != 1.0f) {
    w.set(p + "rope.scaling.type", Value::of_string("linear"));
    w.set(p + "rope.scaling.factor", Value::of_f32(1.0f / rope_freq_scale));
  }
  // phi3: llama.cpp before mid-2025 refuses a phi3 file without a sliding window (and applies
  // it); newer llama.cpp ignores it, as recur does. The whole context keeps both the same.
  if (arch == Arch::kPhi3) w.set(p + "attention.sliding_window", Value::of_u32(uint32_t(context)));
  if (arch == Arch::kGemma2) {
    w.set(p + "attn_logit_softcapping", Value::of_f32(attn_softcap));
    w.set(p + "final_logit_softcapping", Value::of_f32(final_softcap));
    w.set(p + "attention.sliding_window", Value::of_u32(uint32_t(sliding_window)));
  }
  if (arch != Arch::kHybrid && n_experts > 0) {
    w.set(p + "expert_count", Value::of_u32(uint32_t(n_experts)));
    w.set(p + "expert_used_count", Value::of_u32(uint32_t(n_experts_used)));
    w.set(p + "expert_feed_forward_length", Value::of_u32(uint32_t(ffn_dim)));
    if (shared_expert) w.set(p + "expert_shared_feed_forward_length", Value::of_u32(uint32_t(shared_width())));
  }
  if (arch == Arch::kHybrid) {
    w.set(p + "layer_pattern", Value::of_string(layer_pattern));
    w.set(p + "kda.head_count", Value::of_u32(uint32_t(kda_heads)));
    w.set(p + "kda.key_head_count", Value::of_u32(uint32_t(kda_key_heads)));
    w.set(p + "kda.head_dim", Value::of_u32(uint32_t(kda_head_dim)));
    w.set(p + "kda.conv_size", Value::of_u32(uint32_t(conv_size)));
    w.set(p + "expert_count", Value::of_u32(uint32_t(n_experts)));
    w.set(p + "expert_used_count", Value::of_u32(uint32_t(n_experts_used)));
    w.set(p + "expert_shared_count", Value::of_u32(shared_expert ? 1 : 0));
  }
}

Result<ModelConfig> ModelConfig::from_hf_config(std::string_view text, std::string_view source) {
  using nlohmann::json;
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return parse_error("{}: not a JSON object", source);
  auto get_int = [&](const char* key, int& out, bool required) -> Status {
    auto it = j.find(key);
    if (it == j.end()) {
      if (required) return parse_error("{}: missing '{}'", source, key);
      return ok_status();
    }
    if (!it->is_number_integer()) return parse_error("{}: '{}' must be an integer", source, key);
    out = it->get<int>();
    return ok_status();
  };
  ModelConfig c;
  c.arch = Arch::kLlama;
  if (auto arch = j.find("architectures"); arch != j.end() && arch->is_array() && !arch->empty() &&
                                           (*arch)[0].is_string()) {
    std::string name = (*arch)[0].get<std::string>();
    if (name != "LlamaForCausalLM" && name != "MistralForCausalLM")
      return unsupported("{}: architecture '{}' (recur reads LlamaForCausalLM and MistralForCausalLM)", source, name);
  }
  RECUR_RETURN_IF_ERROR(get_int("hidden_size", c.dim, true));
  RECUR_RETURN_IF_ERROR(get_int("num_hidden_layers", c.n_layers, true));
  RECUR_RETURN_IF_ERROR(get_int("num_attention_heads", c.n_heads, true));
  c.n_kv_heads = c.n_heads;
  RECUR_RETURN_IF_ERROR(get_int("num_key_value_heads", c.n_kv_heads, false));
  RECUR_RETURN_IF_ERROR(get_int("intermediate_size", c.ffn_dim, true));
  RECUR_RETURN_IF_ERROR(get_int("vocab_size", c.vocab, true));
  RECUR_RETURN_IF_ERROR(get_int("max_position_embeddings", c.context, false));
  c.head_dim = c.n_heads > 0 ? c.dim / c.n_heads : 0;
  RECUR_RETURN_IF_ERROR(get_int("head_dim", c.head_dim, false));
  if (auto e = j.find("rms_norm_eps"); e != j.end() && e->is_number()) c.rms_eps = e->get<float>();
  if (auto t = j.find("rope_theta"); t != j.end() && t->is_number()) c.rope_theta = t->get<float>();
  if (auto t = j.find("tie_word_embeddings"); t != j.end() && t->is_boolean()) c.tied_embeddings = t->get<bool>();
  if (auto s = c.validate(); !s) return unexpected(s.error().with_context(source));
  return c;
}

}  // namespace recur
