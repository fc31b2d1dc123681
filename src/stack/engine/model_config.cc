#include "engine/model_config.h"

#include <algorithm>

#include <nlohmann/json.hpp>

#include "engine/deepseek2_config.h"

namespace recur {

std::string_view arch_name(Arch a) {
  switch (a) {
    case Arch::kLlama: return "llama";
    case Arch::kHybrid: return "hybrid";
    case Arch::kDeepseek2: return "deepseek2";
    case Arch::kKimiLinear: return "kimi-linear";
  }
  return "?";
}

int ModelConfig::max_ffn_width() const {
  int w = ffn_dim;
  if (leading_dense_layers > 0) w = std::max(w, dense_ffn_dim);
  if (n_shared_experts > 0) w = std::max(w, n_shared_experts * ffn_dim);
  return w;
}

bool ModelConfig::is_kda_layer(int layer) const {
  if ((arch != Arch::kHybrid && arch != Arch::kKimiLinear) || layer_pattern.empty()) return false;
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
  if (arch == Arch::kHybrid || arch == Arch::kKimiLinear) {
    if (layer_pattern.empty() || layer_pattern.find_first_not_of("ka") != std::string::npos)
      return invalid_argument("model config: layer pattern '{}' must be letters k (KDA) and a (attention)", layer_pattern);
    RECUR_RETURN_IF_ERROR(positive("kda heads", kda_heads));
    RECUR_RETURN_IF_ERROR(positive("kda key heads", kda_key_heads));
    RECUR_RETURN_IF_ERROR(positive("kda head dim", kda_head_dim));
    RECUR_RETURN_IF_ERROR(positive("conv size", conv_size));
    if (kda_heads % kda_key_heads != 0)
      return invalid_argument("model config: {} KDA heads is not a multiple of {} key heads", kda_heads, kda_key_heads);
    if (n_experts < 0 || (n_experts > 0 && (n_experts_used <= 0 || n_experts_used > n_experts)))
      return invalid_argument("model config: top-{} of {} experts", n_experts_used, n_experts);
  }
  if (arch == Arch::kDeepseek2 || arch == Arch::kKimiLinear) RECUR_RETURN_IF_ERROR(validate_deepseek2(*this));
  return ok_status();
}

Result<ModelConfig> ModelConfig::from_gguf(const gguf::File& f) {
  ModelConfig c;
  RECUR_ASSIGN_OR_RETURN(std::string arch, f.get_string("general.architecture"));
  if (arch == "llama") c.arch = Arch::kLlama;
  else if (arch == "hybrid") c.arch = Arch::kHybrid;
  else if (arch == "deepseek2") c.arch = Arch::kDeepseek2;
  else if (arch == "kimi-linear") c.arch = Arch::kKimiLinear;
  else return unsupported("{}: architecture '{}' (recur runs llama, hybrid, deepseek2 and kimi-linear)", f.source(), arch);
  const std::string p = arch + ".";
  auto get = [&](const std::string& key, int& out) -> Status {
    RECUR_ASSIGN_OR_RETURN(int64_t v, f.get_int(p + key));
    out = int(v);
    return ok_status();
  };
  auto get_opt = [&](const std::string& key, int& out) -> Status {
    if (!f.find(p + key)) return ok_status();
    return get(key, out);
  };
  RECUR_RETURN_IF_ERROR(get("embedding_length", c.dim));
  RECUR_RETURN_IF_ERROR(get("block_count", c.n_layers));
  RECUR_RETURN_IF_ERROR(get("feed_forward_length", c.ffn_dim));
  RECUR_RETURN_IF_ERROR(get("attention.head_count", c.n_heads));
  c.n_kv_heads = c.n_heads;
  if (c.arch != Arch::kKimiLinear)  // kimi-linear's is per layer (kimi_linear_config)
    RECUR_RETURN_IF_ERROR(get_opt("attention.head_count_kv", c.n_kv_heads));
  RECUR_RETURN_IF_ERROR(get_opt("context_length", c.context));
  c.head_dim = c.n_heads > 0 ? c.dim / c.n_heads : 0;
  RECUR_RETURN_IF_ERROR(get_opt("attention.key_length", c.head_dim));
  if (f.find(p + "attention.layer_norm_rms_epsilon")) {
    RECUR_ASSIGN_OR_RETURN(double eps, f.get_float(p + "attention.layer_norm_rms_epsilon"));
    c.rms_eps = float(eps);
  }
  if (f.find(p + "rope.freq_base")) {
    RECUR_ASSIGN_OR_RETURN(double theta, f.get_float(p + "rope.freq_base"));
    c.rope_theta = float(theta);
  }
  if (f.find(p + "vocab_size")) {
    RECUR_RETURN_IF_ERROR(get("vocab_size", c.vocab));
  } else if (const gguf::Value* tokens = f.find("tokenizer.ggml.tokens")) {
    c.vocab = int(tokens->items.size());
  } else if (const gguf::TensorInfo* emb = f.tensor("token_embd.weight"); emb && emb->dims.size() == 2) {
    c.vocab = int(emb->dims[1]);
  }
  c.tied_embeddings = f.tensor("output.weight") == nullptr;
  if (c.arch == Arch::kHybrid) {
    RECUR_ASSIGN_OR_RETURN(c.layer_pattern, f.get_string(p + "layer_pattern"));
    RECUR_RETURN_IF_ERROR(get("kda.head_count", c.kda_heads));
    c.kda_key_heads = c.kda_heads;
    RECUR_RETURN_IF_ERROR(get_opt("kda.key_head_count", c.kda_key_heads));
    RECUR_RETURN_IF_ERROR(get("kda.head_dim", c.kda_head_dim));
    RECUR_RETURN_IF_ERROR(get_opt("kda.conv_size", c.conv_size));
    RECUR_RETURN_IF_ERROR(get_opt("expert_count", c.n_experts));
    RECUR_RETURN_IF_ERROR(get_opt("expert_used_count", c.n_experts_used));
    int shared = 0;
    RECUR_RETURN_IF_ERROR(get_opt("expert_shared_count", shared));
    c.shared_expert = shared > 0;
  }
  if (c.arch == Arch::kDeepseek2) RECUR_RETURN_IF_ERROR(read_deepseek2_keys(f, c));
  if (c.arch == Arch::kKimiLinear) RECUR_RETURN_IF_ERROR(read_kimi_linear_keys(f, c));
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
  if (arch == Arch::kDeepseek2) write_deepseek2_keys(*this, w);
  if (arch == Arch::kKimiLinear) write_kimi_linear_keys(*this, w);
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
