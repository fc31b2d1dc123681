#include "engine/deepseek2_config.h"

namespace recur {

namespace {

// The MLA and MoE keys deepseek2 and kimi-linear share, under k's prefix ("deepseek2.").
Status read_mla_moe_keys(const ArchKeys& k, ModelConfig& c) {
  const gguf::File& f = k.file();
  const std::string p = std::string(arch_name(c.arch)) + ".";
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.q_lora_rank", c.q_lora_rank));
  RECUR_RETURN_IF_ERROR(k.get("attention.kv_lora_rank", c.kv_lora_rank));
  RECUR_RETURN_IF_ERROR(k.get("rope.dimension_count", c.qk_rope_dim));
  // MLA-cache files: key_length_mla / value_length_mla; older ones: key_length / value_length.
  int key_length = c.head_dim, value_length = 0;
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.value_length", value_length));
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.key_length_mla", key_length));
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.value_length_mla", value_length));
  c.mla_unsplit_kv_b = f.find(p + "attention.key_length_mla") == nullptr;
  if (value_length == 0) return parse_error("{}: {} needs '{}attention.value_length_mla'", f.source(), arch_name(c.arch), p);
  c.head_dim = key_length;
  c.qk_nope_dim = key_length - c.qk_rope_dim;
  c.v_head_dim = value_length;
  c.dense_ffn_dim = c.ffn_dim;
  RECUR_RETURN_IF_ERROR(k.get_opt("leading_dense_block_count", c.leading_dense_layers));
  RECUR_RETURN_IF_ERROR(k.get_opt("expert_count", c.n_experts));
  RECUR_RETURN_IF_ERROR(k.get_opt("expert_used_count", c.n_experts_used));
  if (c.n_experts > 0) RECUR_RETURN_IF_ERROR(k.get("expert_feed_forward_length", c.ffn_dim));
  int shared_experts = 0;
  RECUR_RETURN_IF_ERROR(k.get_opt("expert_shared_count", shared_experts));
  c.shared_expert = c.n_experts > 0 && shared_experts > 0;
  c.shared_ffn_dim = c.shared_expert ? shared_experts * c.ffn_dim : 0;
  RECUR_RETURN_IF_ERROR(k.get_opt("expert_weights_scale", c.expert_weights_scale));
  if (const gguf::Value* v = f.find(p + "expert_weights_norm")) c.moe_renormalize = v->boolean || v->u64 != 0;
  int gating = 0;
  RECUR_RETURN_IF_ERROR(k.get_opt("expert_gating_func", gating));
  if (gating == 0) gating = int(ExpertGating::kSoftmax);  // llama.cpp's default for older V2 files
  if (gating != int(ExpertGating::kSoftmax) && gating != int(ExpertGating::kSigmoid))
    return parse_error("{}: {}expert_gating_func is {}; recur runs 1 (softmax) and 2 (sigmoid)", f.source(), p, gating);
  c.expert_gating = ExpertGating(gating);
  std::string scaling = "none";
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.scaling.type", scaling));
  if (scaling != "yarn" && scaling != "none")
    return unsupported("{}: {}rope.scaling.type '{}'; {} runs yarn or none", f.source(), p, scaling, arch_name(c.arch));
  if (scaling == "yarn") {
    RECUR_RETURN_IF_ERROR(k.get_opt("rope.scaling.factor", c.rope_yarn_factor));
    RECUR_RETURN_IF_ERROR(k.get("rope.scaling.original_context_length", c.rope_original_context));
  }
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.scaling.yarn_log_multiplier", c.rope_yarn_log_mul));
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.scaling.yarn_beta_fast", c.rope_yarn_beta_fast));
  RECUR_RETURN_IF_ERROR(k.get_opt("rope.scaling.yarn_beta_slow", c.rope_yarn_beta_slow));
  return ok_status();
}

void write_mla_moe_keys(const ModelConfig& c, const std::string& p, gguf::Writer& w) {
  using gguf::Value;
  w.set(p + "feed_forward_length", Value::of_u32(uint32_t(c.dense_ffn_dim)));
  if (c.q_lora_rank > 0) w.set(p + "attention.q_lora_rank", Value::of_u32(uint32_t(c.q_lora_rank)));
  w.set(p + "attention.kv_lora_rank", Value::of_u32(uint32_t(c.kv_lora_rank)));
  if (c.mla_unsplit_kv_b) {  // the older form: per-head lengths (c392e50 sizes its K/V cache by them)
    w.set(p + "attention.key_length", Value::of_u32(uint32_t(c.qk_nope_dim + c.qk_rope_dim)));
    w.set(p + "attention.value_length", Value::of_u32(uint32_t(c.v_head_dim)));
  } else {  // the latent as one MQA head: [c ; k_r] keys, c values
    w.set(p + "attention.key_length", Value::of_u32(uint32_t(c.kv_lora_rank + c.qk_rope_dim)));
    w.set(p + "attention.value_length", Value::of_u32(uint32_t(c.kv_lora_rank)));
    w.set(p + "attention.key_length_mla", Value::of_u32(uint32_t(c.qk_nope_dim + c.qk_rope_dim)));
    w.set(p + "attention.value_length_mla", Value::of_u32(uint32_t(c.v_head_dim)));
  }
  w.set(p + "rope.dimension_count", Value::of_u32(uint32_t(c.qk_rope_dim)));
  w.set(p + "leading_dense_block_count", Value::of_u32(uint32_t(c.leading_dense_layers)));
  w.set(p + "expert_feed_forward_length", Value::of_u32(uint32_t(c.ffn_dim)));
  w.set(p + "expert_count", Value::of_u32(uint32_t(c.n_experts)));
  w.set(p + "expert_used_count", Value::of_u32(uint32_t(c.n_experts_used)));
  w.set(p + "expert_shared_count", Value::of_u32(uint32_t(c.shared_expert ? c.shared_width() / c.ffn_dim : 0)));
  w.set(p + "expert_weights_scale", Value::of_f32(c.expert_weights_scale));
  w.set(p + "expert_weights_norm", Value::of_bool(c.moe_renormalize));
  w.set(p + "expert_gating_func", Value::of_u32(uint32_t(c.expert_gating)));
  if (c.rope_yarn_factor > 1) {
    w.set(p + "rope.scaling.type", Value::of_string("yarn"));
    w.set(p + "rope.scaling.factor", Value::of_f32(c.rope_yarn_factor));
    w.set(p + "rope.scaling.original_context_length", Value::of_u32(uint32_t(c.rope_original_context)));
  }
  // c392e50 requires the multiplier even without YaRN (its mscale is then 1 whatever the value).
  if (c.rope_yarn_factor > 1 || c.mla_unsplit_kv_b)
    w.set(p + "rope.scaling.yarn_log_multiplier", Value::of_f32(c.rope_yarn_log_mul));
}

}  // namespace

Status read_deepseek2_keys(const ArchKeys& k, ModelConfig& c) {
  c.n_kv_heads = c.n_heads;
  RECUR_RETURN_IF_ERROR(k.get_opt("attention.head_count_kv", c.n_kv_heads));
  return read_mla_moe_keys(k, c);
}

void write_deepseek2_keys(const ModelConfig& c, gguf::Writer& w) {
  w.set("deepseek2.attention.head_count_kv", gguf::Value::of_u32(c.mla_unsplit_kv_b ? uint32_t(c.n_heads) : 1));
  write_mla_moe_keys(c, "deepseek2.", w);
}

Status read_kimi_linear_keys(const ArchKeys& k, ModelConfig& c) {
  const gguf::File& f = k.file();
  const std::string p = "kimi-linear.";
  RECUR_RETURN_IF_ERROR(read_mla_moe_keys(k, c));
  c.moe_renormalize = true;  // llama.cpp's graph renormalizes kimi-linear's top-k always (kimi_linear_features)
  if (!f.find(p + "expert_gating_func"))
    return parse_error("{}: kimi-linear needs metadata key '{}expert_gating_func'", f.source(), p);
  // head_count_kv per layer: 0 marks a KDA (recurrent) layer, anything else an MLA layer.
  const gguf::Value* kv = f.find(p + "attention.head_count_kv");
  if (kv == nullptr || int(kv->items.size()) != c.n_layers)
    return parse_error("{}: kimi-linear needs '{}attention.head_count_kv' as an array of {} per-layer values "
                       "(0 = KDA layer)",
                       f.source(), p, c.n_layers);
  c.layer_pattern.clear();
  for (const gguf::Value& v : kv->items) c.layer_pattern.push_back(v.as_int().value_or(0) == 0 ? 'k' : 'a');
  c.n_kv_heads = 1;
  RECUR_RETURN_IF_ERROR(k.get("kda.head_dim", c.kda_head_dim));
  RECUR_RETURN_IF_ERROR(k.get("ssm.conv_kernel", c.conv_size));
  c.kda_heads = c.kda_key_heads = c.n_heads;  // KDA and MLA share head_count
  return ok_status();
}

void write_kimi_linear_keys(const ModelConfig& c, gguf::Writer& w) {
  using gguf::Value;
  const std::string p = "kimi-linear.";
  std::vector<int32_t> kv;
  for (int l = 0; l < c.n_layers; ++l) kv.push_back(c.is_kda_layer(l) ? 0 : 1);
  w.set(p + "attention.head_count_kv", Value::of_i32s(kv));
  write_mla_moe_keys(c, p, w);
  w.set(p + "kda.head_dim", Value::of_u32(uint32_t(c.kda_head_dim)));
  w.set(p + "ssm.conv_kernel", Value::of_u32(uint32_t(c.conv_size)));
}

Status validate_deepseek2(const ModelConfig& c) {
  if (c.kv_lora_rank <= 0 || c.qk_rope_dim <= 0 || c.qk_rope_dim % 2 != 0 || c.qk_nope_dim <= 0 || c.v_head_dim <= 0)
    return invalid_argument("model config: deepseek2 kv_lora_rank {}, rope dims {} (even), nope dims {}, value dims {}: "
                            "each must be positive",
                            c.kv_lora_rank, c.qk_rope_dim, c.qk_nope_dim, c.v_head_dim);
  if (c.q_lora_rank < 0) return invalid_argument("model config: q_lora_rank {} is negative", c.q_lora_rank);
  if (c.leading_dense_layers < 0 || c.leading_dense_layers > c.n_layers)
    return invalid_argument("model config: {} leading dense layers of {}", c.leading_dense_layers, c.n_layers);
  if (c.leading_dense_layers > 0 && c.dense_ffn_dim <= 0)
    return invalid_argument("model config: leading dense layers need a positive feed_forward_length, got {}",
                            c.dense_ffn_dim);
  if (c.n_experts == 0 && c.leading_dense_layers < c.n_layers)
    return invalid_argument("model config: {} of {} layers are MoE but there are no experts",
                            c.n_layers - c.leading_dense_layers, c.n_layers);
  if (c.shared_expert && c.shared_width() % c.ffn_dim != 0)
    return invalid_argument("model config: shared expert width {} is not whole experts of {}", c.shared_width(),
                            c.ffn_dim);
  if (c.rope_yarn_factor > 1 && c.rope_original_context <= 0)
    return invalid_argument("model config: YaRN factor {} needs the original context length", c.rope_yarn_factor);
  return ok_status();
}

}  // namespace recur
