#include "engine/deepseek2_config.h"

namespace recur {

namespace {

// The MLA and MoE keys deepseek2 and kimi-linear share, under prefix p ("deepseek2.").
Status read_mla_moe_keys(const gguf::File& f, const std::string& p, ModelConfig& c) {
  auto get_int = [&](const char* key, int& out, bool required) -> Status {
    if (!f.find(p + key)) {
      if (required) return parse_error("{}: deepseek2 needs metadata key '{}{}'", f.source(), p, key);
      return ok_status();
    }
    RECUR_ASSIGN_OR_RETURN(int64_t v, f.get_int(p + key));
    out = int(v);
    return ok_status();
  };
  auto get_float = [&](const char* key, float& out) -> Status {
    if (!f.find(p + key)) return ok_status();
    RECUR_ASSIGN_OR_RETURN(double v, f.get_float(p + key));
    out = float(v);
    return ok_status();
  };
  RECUR_RETURN_IF_ERROR(get_int("attention.q_lora_rank", c.q_lora_rank, false));
  RECUR_RETURN_IF_ERROR(get_int("attention.kv_lora_rank", c.kv_lora_rank, true));
  RECUR_RETURN_IF_ERROR(get_int("rope.dimension_count", c.qk_rope_dim, true));
  // MLA-cache files: key_length_mla / value_length_mla; older ones: key_length / value_length.
  int key_length = c.head_dim, value_length = 0;
  RECUR_RETURN_IF_ERROR(get_int("attention.value_length", value_length, false));
  RECUR_RETURN_IF_ERROR(get_int("attention.key_length_mla", key_length, false));
  RECUR_RETURN_IF_ERROR(get_int("attention.value_length_mla", value_length, false));
  if (value_length == 0) return parse_error("{}: deepseek2 needs '{}attention.value_length_mla'", f.source(), p);
  c.head_dim = key_length;
  c.qk_nope_dim = key_length - c.qk_rope_dim;
  c.v_head_dim = value_length;
  c.dense_ffn_dim = c.ffn_dim;
  RECUR_RETURN_IF_ERROR(get_int("leading_dense_block_count", c.leading_dense_layers, false));
  RECUR_RETURN_IF_ERROR(get_int("expert_count", c.n_experts, false));
  RECUR_RETURN_IF_ERROR(get_int("expert_used_count", c.n_experts_used, false));
  if (c.n_experts > 0) RECUR_RETURN_IF_ERROR(get_int("expert_feed_forward_length", c.ffn_dim, true));
  RECUR_RETURN_IF_ERROR(get_int("expert_shared_count", c.n_shared_experts, false));
  c.shared_expert = c.n_experts > 0 && c.n_shared_experts > 0;
  RECUR_RETURN_IF_ERROR(get_float("expert_weights_scale", c.expert_weights_scale));
  c.expert_weights_norm = false;
  if (const gguf::Value* v = f.find(p + "expert_weights_norm")) c.expert_weights_norm = v->boolean || v->u64 != 0;
  int gating = 0;
  RECUR_RETURN_IF_ERROR(get_int("expert_gating_func", gating, false));
  if (gating == 0) gating = int(ExpertGating::kSoftmax);  // llama.cpp's default for older V2 files
  if (gating != int(ExpertGating::kSoftmax) && gating != int(ExpertGating::kSigmoid))
    return parse_error("{}: {}expert_gating_func is {}; recur runs 1 (softmax) and 2 (sigmoid)", f.source(), p, gating);
  c.expert_gating = ExpertGating(gating);
  if (f.find(p + "rope.scaling.type")) {
    RECUR_ASSIGN_OR_RETURN(std::string type, f.get_string(p + "rope.scaling.type"));
    if (type != "yarn" && type != "none")
      return parse_error("{}: {}rope.scaling.type '{}'; deepseek2 runs yarn or none", f.source(), p, type);
    if (type == "yarn") {
      RECUR_RETURN_IF_ERROR(get_float("rope.scaling.factor", c.rope_yarn_factor));
      RECUR_RETURN_IF_ERROR(get_int("rope.scaling.original_context_length", c.rope_original_context, true));
    }
  }
  RECUR_RETURN_IF_ERROR(get_float("rope.scaling.yarn_log_multiplier", c.rope_yarn_log_mul));
  RECUR_RETURN_IF_ERROR(get_float("rope.scaling.yarn_beta_fast", c.rope_yarn_beta_fast));
  RECUR_RETURN_IF_ERROR(get_float("rope.scaling.yarn_beta_slow", c.rope_yarn_beta_slow));
  return ok_status();
}

void write_mla_moe_keys(const ModelConfig& c, const std::string& p, gguf::Writer& w) {
  using gguf::Value;
  w.set(p + "feed_forward_length", Value::of_u32(uint32_t(c.dense_ffn_dim)));
  if (c.q_lora_rank > 0) w.set(p + "attention.q_lora_rank", Value::of_u32(uint32_t(c.q_lora_rank)));
  w.set(p + "attention.kv_lora_rank", Value::of_u32(uint32_t(c.kv_lora_rank)));
  w.set(p + "attention.key_length", Value::of_u32(uint32_t(c.kv_lora_rank + c.qk_rope_dim)));
  w.set(p + "attention.value_length", Value::of_u32(uint32_t(c.kv_lora_rank)));
  w.set(p + "attention.key_length_mla", Value::of_u32(uint32_t(c.qk_nope_dim + c.qk_rope_dim)));
  w.set(p + "attention.value_length_mla", Value::of_u32(uint32_t(c.v_head_dim)));
  w.set(p + "rope.dimension_count", Value::of_u32(uint32_t(c.qk_rope_dim)));
  w.set(p + "leading_dense_block_count", Value::of_u32(uint32_t(c.leading_dense_layers)));
  w.set(p + "expert_feed_forward_length", Value::of_u32(uint32_t(c.ffn_dim)));
  w.set(p + "expert_count", Value::of_u32(uint32_t(c.n_experts)));
  w.set(p + "expert_used_count", Value::of_u32(uint32_t(c.n_experts_used)));
  w.set(p + "expert_shared_count", Value::of_u32(uint32_t(c.n_shared_experts)));
  w.set(p + "expert_weights_scale", Value::of_f32(c.expert_weights_scale));
  w.set(p + "expert_weights_norm", Value::of_bool(c.expert_weights_norm));
  w.set(p + "expert_gating_func", Value::of_u32(uint32_t(c.expert_gating)));
  if (c.rope_yarn_factor > 1) {
    w.set(p + "rope.scaling.type", Value::of_string("yarn"));
    w.set(p + "rope.scaling.factor", Value::of_f32(c.rope_yarn_factor));
    w.set(p + "rope.scaling.original_context_length", Value::of_u32(uint32_t(c.rope_original_context)));
    w.set(p + "rope.scaling.yarn_log_multiplier", Value::of_f32(c.rope_yarn_log_mul));
  }
}

}  // namespace

Status read_deepseek2_keys(const gguf::File& f, ModelConfig& c) { return read_mla_moe_keys(f, "deepseek2.", c); }

void write_deepseek2_keys(const ModelConfig& c, gguf::Writer& w) {
  w.set("deepseek2.attention.head_count_kv", gguf::Value::of_u32(1));
  write_mla_moe_keys(c, "deepseek2.", w);
}

Status read_kimi_linear_keys(const gguf::File& f, ModelConfig& c) {
  const std::string p = "kimi-linear.";
  RECUR_RETURN_IF_ERROR(read_mla_moe_keys(f, p, c));
  c.mla_rope = false;            // Kimi's MLA layers run without RoPE (llama.cpp, vLLM)
  c.expert_weights_norm = true;  // llama.cpp's graph renormalizes kimi-linear's top-k always
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
  auto get = [&](const char* key, int& out) -> Status {
    RECUR_ASSIGN_OR_RETURN(int64_t v, f.get_int(p + key));
    out = int(v);
    return ok_status();
  };
  RECUR_RETURN_IF_ERROR(get("kda.head_dim", c.kda_head_dim));
  RECUR_RETURN_IF_ERROR(get("ssm.conv_kernel", c.conv_size));
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
  if (c.n_experts < 0 || (c.n_experts > 0 && (c.n_experts_used <= 0 || c.n_experts_used > c.n_experts)))
    return invalid_argument("model config: top-{} of {} experts", c.n_experts_used, c.n_experts);
  if (c.n_experts == 0 && c.leading_dense_layers < c.n_layers)
    return invalid_argument("model config: {} of {} layers are MoE but there are no experts",
                            c.n_layers - c.leading_dense_layers, c.n_layers);
  if (c.rope_yarn_factor > 1 && c.rope_original_context <= 0)
    return invalid_argument("model config: YaRN factor {} needs the original context length", c.rope_yarn_factor);
  return ok_status();
}

}  // namespace recur
