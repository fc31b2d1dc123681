#include "engine/model_config.h"

#include <algorithm>


#include "engine/architectures.h"
#include "engine/deepseek2_config.h"
#include "engine/hf_config.h"
#include "engine/qwen3next.h"

namespace recur {

int ModelConfig::max_ffn_width() const {
  int w = ffn_dim;
  if (leading_dense_layers > 0) w = std::max(w, dense_ffn_dim);
  if (n_experts > 0 && shared_expert) w = std::max(w, shared_width());
  return w;
}

bool ModelConfig::is_kda_layer(int layer) const {
  if (!architecture(arch).kda_layers || layer_pattern.empty()) return false;
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
  if (sliding_window < 0) return invalid_argument("model config: sliding window {} is negative", sliding_window);
  if (!(rope_freq_scale > 0)) return invalid_argument("model config: RoPE frequency scale {} must be > 0", rope_freq_scale);
  if (!(expert_weights_scale > 0))
    return invalid_argument("model config: expert weights scale {} must be > 0", expert_weights_scale);
  const Architecture& row = architecture(arch);
  if (row.kda_layers) {
    if (layer_pattern.empty() || layer_pattern.find_first_not_of("ka") != std::string::npos)
      return invalid_argument("model config: layer pattern '{}' must be letters k (KDA) and a (attention)", layer_pattern);
    RECUR_RETURN_IF_ERROR(positive("kda heads", kda_heads));
    RECUR_RETURN_IF_ERROR(positive("kda key heads", kda_key_heads));
    RECUR_RETURN_IF_ERROR(positive("kda head dim", kda_head_dim));
    RECUR_RETURN_IF_ERROR(positive("conv size", conv_size));
    if (kda_heads % kda_key_heads != 0)
      return invalid_argument("model config: {} KDA heads is not a multiple of {} key heads", kda_heads, kda_key_heads);
  }
  if (row.mla) RECUR_RETURN_IF_ERROR(validate_deepseek2(*this));
  if (arch == Arch::kQwen3Next) RECUR_RETURN_IF_ERROR(validate_qwen3next(*this));
  return ok_status();
}

namespace {

// The attention keys of the rows with multi-head / grouped-query attention.
Status read_attention_keys(const ArchKeys& k, ModelConfig& c) {
  const std::string_view name = arch_name(c.arch);
  const std::string_view source = k.file().source();
  c.n_kv_heads = c.n_heads;
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.head_count_kv", c.n_kv_heads));
  int value_length = c.head_dim;
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.value_length", value_length));
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.dimension_count", c.rope_dims));
  if (value_length != c.head_dim)
    return unsupported("{}: {}.attention.value_length {} differs from key_length {} (recur needs them equal)", source,
                       name, value_length, c.head_dim);
  // RoPE scaling: linear (angles times 1 / factor; llama.cpp's freq_scale) or none. Llama 3's
  // scaling is the rope_freqs.weight tensor instead (per-pair divisors, transformer.h).
  std::string scaling = "none";
  float factor = 1.0f;
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.scaling.type", scaling));
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.scale_linear", factor));
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.scaling.factor", factor));
  if (scaling == "linear" || (scaling == "none" && k.has("rope.scale_linear"))) {
    if (!(factor > 0)) return invalid_argument("{}: {}.rope.scaling.factor {} must be > 0", source, name, factor);
    c.rope_freq_scale = 1.0f / factor;
  } else if (scaling != "none") {
    return unsupported("{}: {}.rope.scaling.type '{}' (recur runs none and linear; Llama 3 scaling is the "
                       "rope_freqs.weight tensor)",
                       source, name, scaling);
  }
  return ok_status();
}

}  // namespace

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
  RECUR_RETURN_IF_ERROR(k.get_opt("context_length", c.context));
  c.head_dim = c.n_heads > 0 ? c.dim / c.n_heads : 0;
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.key_length", c.head_dim));
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.layer_norm_rms_epsilon", c.rms_eps));
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.freq_base", c.rope_theta));
  // MLA rows read their own attention keys (kimi-linear's head_count_kv is per layer, value and
  // key lengths differ, YaRN scaling): deepseek2_config.cc.
  if (!arch->mla) RECUR_RETURN_IF_ERROR(read_attention_keys(k, c));
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
  architecture(arch).write_keys(*this, w);  // the row's own keys (MLA rows rewrite the attention ones)
}

Result<ModelConfig> ModelConfig::from_hf_config(std::string_view text, std::string_view source) {
  RECUR_ASSIGN_OR_RETURN(HfModelConfig hf, read_hf_config(text, source));  // every row of hf_config.h
  return hf.config;
}

}  // namespace recur
