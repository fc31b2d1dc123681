#include "engine/hf_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "engine/architectures.h"

namespace recur {

using nlohmann::json;

const json* HfKeys::find(std::string_view key) const {
  auto it = j_.find(std::string(key));
  if (it == j_.end() || it->is_null()) return nullptr;
  return &*it;
}

Status HfKeys::get(std::string_view key, int& out) const {
  if (!has(key)) return parse_error("{}: missing '{}'", source_, name(key));
  return get_opt(key, out);
}

namespace {

// One typed lookup: absent leaves `out`; a value of another JSON type is an error naming it.
template <class T, class Check>
Status hf_typed(const HfKeys& k, std::string_view key, T& out, Check is_type, const char* expected) {
  const json* v = k.find(key);
  if (v == nullptr) return ok_status();
  if (!is_type(*v)) return parse_error("{}: '{}' must be {}, got {}", k.source(), k.name(key), expected, v->dump());
  out = v->get<T>();
  return ok_status();
}

}  // namespace

Status HfKeys::get_opt(std::string_view key, int& out) const {
  int64_t x = out;
  RECUR_RETURN_IF_ERROR(hf_typed(*this, key, x, [](const json& v) { return v.is_number_integer(); }, "an integer"));
  if (x < INT32_MIN || x > INT32_MAX) return parse_error("{}: '{}' is {}, out of range", source_, name(key), x);
  out = int(x);
  return ok_status();
}

Status HfKeys::get_opt(std::string_view key, float& out) const {
  return hf_typed(*this, key, out, [](const json& v) { return v.is_number(); }, "a number");
}

Status HfKeys::get_opt(std::string_view key, bool& out) const {
  return hf_typed(*this, key, out, [](const json& v) { return v.is_boolean(); }, "true or false");
}

Status HfKeys::get_opt(std::string_view key, std::string& out) const {
  return hf_typed(*this, key, out, [](const json& v) { return v.is_string(); }, "a string");
}

Status HfKeys::refuse_unless(std::string_view key, bool expected, std::string_view why) const {
  bool value = expected;
  RECUR_RETURN_IF_ERROR(get_opt(key, value));
  if (value != expected) return unsupported("{}: '{}' is {} ({})", source_, name(key), value, why);
  return ok_status();
}

std::vector<float> llama3_rope_divisors(int d, double theta, const Llama3Rope& r) {
  const double low_wavelen = r.original_context / r.low_freq_factor;
  const double high_wavelen = r.original_context / r.high_freq_factor;
  std::vector<float> out;
  for (int i = 0; i < d; i += 2) {
    const double freq = 1 / std::pow(theta, double(i) / d), wavelen = 2 * M_PI / freq;
    if (wavelen < high_wavelen) out.push_back(1.0f);
    else if (wavelen > low_wavelen) out.push_back(float(r.factor));
    else {
      const double smooth = (r.original_context / wavelen - r.low_freq_factor) / (r.high_freq_factor - r.low_freq_factor);
      out.push_back(float(1 / ((1 - smooth) / r.factor + smooth)));
    }
  }
  return out;
}

namespace {

// A rope_parameters object keyed by layer type ({"full_attention": {...}, ...}) rather than one
// RoPE ({rope_type, rope_theta, ...}): every value an object or null.
bool hf_rope_per_layer_type(const json& params) {
  return !params.empty() && std::all_of(params.begin(), params.end(), [](const json& v) { return v.is_object() || v.is_null(); });
}

// One number of a RoPE given both ways (rope_theta and rope_parameters' rope_theta, ...): the new
// one where present, refused when both are given and differ.
Status hf_rope_number(const HfKeys& k, std::string_view old_key, const std::optional<HfKeys>& entry, std::string_view where,
                      std::string_view key, std::optional<float>& out, std::string* out_where) {
  std::optional<float> old_value, new_value;
  if (!old_key.empty() && k.has(old_key)) RECUR_RETURN_IF_ERROR(k.get_opt(old_key, old_value.emplace()));
  if (entry && entry->has(key)) RECUR_RETURN_IF_ERROR(entry->get_opt(key, new_value.emplace()));
  if (old_value && new_value && *old_value != *new_value)
    return parse_error("{}: '{}' {} conflicts with '{}.{}' {} (transformers 5 moved it into rope_parameters; keep one or make "
                       "them equal)",
                       k.source(), old_key, *old_value, where, key, *new_value);
  out = new_value ? new_value : old_value;
  if (out_where != nullptr) *out_where = new_value ? fmt::format("{}.{}", where, key) : std::string(old_key);
  return ok_status();
}

std::string hf_rope_type(const json& scaling) {
  for (const char* key : {"rope_type", "type"})
    if (auto it = scaling.find(key); it != scaling.end() && it->is_string()) return it->get<std::string>();
  return "default";
}

}  // namespace

Result<HfRope> read_hf_rope(const HfKeys& k, const HfRopeQuery& q) {
  HfRope r;
  const json* old_scaling = q.scaling_key ? k.find("rope_scaling") : nullptr;
  if (old_scaling != nullptr && !old_scaling->is_object())
    return parse_error("{}: 'rope_scaling' must be an object, got {}", k.source(), old_scaling->dump());
  std::optional<HfKeys> entry;
  std::string where = "rope_parameters";
  if (const json* params = k.find("rope_parameters")) {
    if (!params->is_object())
      return parse_error("{}: 'rope_parameters' must be an object ({{\"rope_type\", \"rope_theta\", ...}} or one such per layer "
                         "type), got {}",
                         k.source(), params->dump());
    if (!hf_rope_per_layer_type(*params)) {
      entry.emplace(*params, k.source(), "rope_parameters.");
    } else {
      where = fmt::format("rope_parameters.{}", q.layer_type);
      auto it = params->find(std::string(q.layer_type));
      const json mine = it == params->end() ? json() : *it;
      if (it != params->end() && it->is_object()) entry.emplace(*it, k.source(), where + ".");
      if (q.one_rope)
        for (const auto& [type, value] : params->items())
          if (type != q.layer_type && !value.is_null() && value != mine)
            return unsupported("{}: 'rope_parameters.{}' differs from '{}' (recur rotates every layer of this model alike)",
                               k.source(), type, where);
    }
  }
  if (entry && old_scaling != nullptr) {
    // transformers 5 reads rope_scaling into rope_parameters: both may stand where they agree.
    const std::string old_type = hf_rope_type(*old_scaling), new_type = hf_rope_type(entry->object());
    if (old_type != new_type)
      return parse_error("{}: 'rope_scaling' type '{}' conflicts with '{}' type '{}' (keep one or make them equal)", k.source(),
                         old_type, where, new_type);
    for (const auto& [key, value] : old_scaling->items()) {
      if (key == "type" || key == "rope_type") continue;
      const json* other = entry->find(key);
      if (other == nullptr || *other != value)
        return parse_error("{}: 'rope_scaling.{}' {} conflicts with '{}.{}' {} (keep one or make them equal)", k.source(), key,
                           value.dump(), where, key, other == nullptr ? "absent" : other->dump());
    }
  }
  if (entry) {
    r.scaling.emplace(entry->object(), k.source(), where + ".");
    r.where = where;
  } else if (old_scaling != nullptr) {
    r.scaling.emplace(*old_scaling, k.source(), "rope_scaling.");
    r.where = "rope_scaling";
  }
  if (r.scaling) {
    std::string type = hf_rope_type(r.scaling->object());
    RECUR_RETURN_IF_ERROR(r.scaling->get_opt("type", type));  // a non-string type is an error naming it
    RECUR_RETURN_IF_ERROR(r.scaling->get_opt("rope_type", type));
    r.type = type;
  }
  RECUR_RETURN_IF_ERROR(hf_rope_number(k, q.theta_key, entry, where, "rope_theta", r.theta, &r.theta_where));
  RECUR_RETURN_IF_ERROR(hf_rope_number(k, "partial_rotary_factor", entry, where, "partial_rotary_factor",
                                       r.partial_rotary_factor, nullptr));
  return r;
}

namespace {

// The RoPE scaling of the dense rows: none, linear (factor), or Llama 3's (rope_freqs divisors,
// read in read_hf_config). Others are refused by name.
Status hf_rope_scaling(const HfKeys& k, ModelConfig& c, bool llama3_allowed) {
  RECUR_ASSIGN_OR_RETURN(const HfRope rope, read_hf_rope(k, {.one_rope = !hf_architecture_of(c.arch)->rope_per_layer_type}));
  if (rope.type == "default") return ok_status();
  if (rope.type == "linear") {
    float factor = 1;
    RECUR_RETURN_IF_ERROR(rope.scaling->get_opt("factor", factor));
    if (!(factor > 0)) return parse_error("{}: {}.factor {} must be > 0", k.source(), rope.where, factor);
    c.rope_freq_scale = 1.0f / factor;
    return ok_status();
  }
  if (rope.type == "llama3" && llama3_allowed) return ok_status();
  return unsupported("{}: {} type '{}' (recur reads linear{} for {})", k.source(), rope.where, rope.type,
                     llama3_allowed ? " and llama3" : "", arch_name(c.arch));
}

void hf_write_nothing(const ModelConfig&, json&) {}

Status hf_llama_keys(const HfKeys& k, ModelConfig& c) { return hf_rope_scaling(k, c, /*llama3_allowed=*/true); }
Status hf_dense_keys(const HfKeys& k, ModelConfig& c) { return hf_rope_scaling(k, c, false); }

// Qwen2-MoE / Qwen3-MoE: every layer sparse (decoder_sparse_step 1, no mlp_only_layers), the
// top-k renormalized as the row does (norm_topk_prob: qwen2moe never, as llama.cpp; qwen3moe
// always); Qwen2-MoE adds a gated shared expert.
Status hf_qwen_moe_keys(const HfKeys& k, ModelConfig& c) {
  RECUR_RETURN_IF_ERROR(hf_rope_scaling(k, c, false));
  RECUR_RETURN_IF_ERROR(k.get("num_experts", c.n_experts));
  RECUR_RETURN_IF_ERROR(k.get("num_experts_per_tok", c.n_experts_used));
  RECUR_RETURN_IF_ERROR(k.get("moe_intermediate_size", c.ffn_dim));
  if (c.shared_expert) RECUR_RETURN_IF_ERROR(k.get("shared_expert_intermediate_size", c.shared_ffn_dim));
  RECUR_RETURN_IF_ERROR(k.refuse_unless("norm_topk_prob", c.moe_renormalize,
                                        c.moe_renormalize ? "recur's qwen3moe renormalizes the top-k"
                                                          : "llama.cpp's qwen2moe never renormalizes the top-k"));
  int step = 1;
  RECUR_RETURN_IF_ERROR(k.get_opt("decoder_sparse_step", step));
  if (step != 1) return unsupported("{}: 'decoder_sparse_step' is {} (recur runs every layer sparse: 1)", k.source(), step);
  if (const json* dense = k.find("mlp_only_layers"); dense != nullptr && !(dense->is_array() && dense->empty()))
    return unsupported("{}: 'mlp_only_layers' {} (recur runs every layer sparse)", k.source(), dense->dump());
  return ok_status();
}

void hf_write_qwen_moe(const ModelConfig& c, json& j) {
  j["num_experts"] = c.n_experts;
  j["num_experts_per_tok"] = c.n_experts_used;
  j["moe_intermediate_size"] = c.ffn_dim;
  if (c.shared_expert) j["shared_expert_intermediate_size"] = c.shared_width();
  j["norm_topk_prob"] = c.moe_renormalize;
}

// Phi-3: LongRoPE (rope_scaling su / longrope) and partial rotary are refused; the sliding window
// is ignored as llama.cpp does (architectures.cc).
Status hf_phi3_keys(const HfKeys& k, ModelConfig& c) {
  RECUR_RETURN_IF_ERROR(hf_rope_scaling(k, c, false));
  RECUR_ASSIGN_OR_RETURN(const HfRope rope, read_hf_rope(k));
  const float partial = rope.partial_rotary_factor.value_or(1.0f);
  if (partial != 1) return unsupported("{}: 'partial_rotary_factor' {} (partial rotary is not supported)", k.source(), partial);
  return ok_status();
}

// Gemma 2: the soft-caps and the sliding window; the LM head is the embedding.
Status hf_gemma2_keys(const HfKeys& k, ModelConfig& c) {
  RECUR_RETURN_IF_ERROR(hf_rope_scaling(k, c, false));
  RECUR_RETURN_IF_ERROR(k.get_opt("attn_logit_softcapping", c.attn_softcap));
  RECUR_RETURN_IF_ERROR(k.get_opt("final_logit_softcapping", c.final_softcap));
  RECUR_RETURN_IF_ERROR(k.get_opt("sliding_window", c.sliding_window));
  c.tied_embeddings = true;
  return ok_status();
}

void hf_write_gemma2(const ModelConfig& c, json& j) {
  j["attn_logit_softcapping"] = c.attn_softcap;
  j["final_logit_softcapping"] = c.final_softcap;
  j["sliding_window"] = c.sliding_window;
  j["query_pre_attn_scalar"] = c.head_dim;
  j["hidden_activation"] = "gelu_pytorch_tanh";
}

// Checks a `layer_types` list (transformers' per-layer form of a pattern) against the one the
// GGUF row derives from its own keys: `is_b(l)` says whether layer l is of kind `b`; a list that
// disagrees is refused at its first differing entry.
Status hf_layer_types(const HfKeys& k, int n_layers, std::string_view a, std::string_view b,
                      const std::function<bool(int)>& is_b, std::string_view rule) {
  const json* types = k.find("layer_types");
  if (types == nullptr) return ok_status();
  if (!types->is_array() || types->size() != size_t(std::max(n_layers, 0)))
    return parse_error("{}: 'layer_types' must be a list of {} entries ('{}' or '{}')", k.source(), n_layers, a, b);
  for (int l = 0; l < n_layers; ++l) {
    const json& t = (*types)[size_t(l)];
    const std::string_view want = is_b(l) ? b : a;
    if (!t.is_string() || t.get<std::string>() != want)
      return unsupported("{}: layer_types[{}] is {}, expected '{}' ({})", k.source(), l, t.dump(), want, rule);
  }
  return ok_status();
}

json hf_layer_types_list(int n_layers, std::string_view a, std::string_view b, const std::function<bool(int)>& is_b) {
  json out = json::array();
  for (int l = 0; l < n_layers; ++l) out.push_back(is_b(l) ? b : a);
  return out;
}

// Gemma 3 (text): five sliding layers of each six (sliding_window_pattern 6, or layer_types in
// that pattern; 1 or every layer full_attention: no window), the sliding layers at RoPE base
// rope_local_base_freq (transformers 5: rope_parameters.sliding_attention.rope_theta) 10000
// unscaled, the global ones at rope_theta with rope_scaling (linear; transformers 5:
// rope_parameters.full_attention); query_pre_attn_scalar as llama.cpp's gemma3 scales queries;
// optional final soft-cap, no attention soft-cap. Absent keys take Gemma3TextConfig's defaults
// (kGemma3TextDefaults; the global base 1e6).
constexpr int kGemma3Pattern = 6;
constexpr float kGemma3LocalTheta = 10000.0f, kGemma3GlobalTheta = 1e6f;

// The sliding layers' RoPE: unscaled at llama.cpp's fixed base.
Status hf_gemma3_local_rope(const HfKeys& k) {
  RECUR_ASSIGN_OR_RETURN(const HfRope local, read_hf_rope(k, {.layer_type = "sliding_attention",
                                                              .theta_key = "rope_local_base_freq",
                                                              .scaling_key = false,
                                                              .one_rope = false}));
  if (local.type != "default")
    return unsupported("{}: {} type '{}' (llama.cpp's gemma3 rotates the sliding layers unscaled)", k.source(), local.where,
                       local.type);
  if (local.theta && *local.theta != kGemma3LocalTheta)
    return unsupported("{}: '{}' is {} (llama.cpp's gemma3 rotates the sliding layers at base 10000)", k.source(),
                       local.theta_where, *local.theta);
  return ok_status();
}

Status hf_gemma3_keys(const HfKeys& k, ModelConfig& c) {
  RECUR_RETURN_IF_ERROR(hf_rope_scaling(k, c, false));
  RECUR_ASSIGN_OR_RETURN(const HfRope global, read_hf_rope(k, {.one_rope = false}));
  if (!global.theta) c.rope_theta = kGemma3GlobalTheta;
  if (k.has("attn_logit_softcapping"))
    return unsupported("{}: 'attn_logit_softcapping' is set (Gemma 3 has none; llama.cpp's gemma3 applies none)", k.source());
  c.final_softcap = 0;
  RECUR_RETURN_IF_ERROR(k.get_opt("final_logit_softcapping", c.final_softcap));
  if (c.final_softcap < 0) return parse_error("{}: 'final_logit_softcapping' {} is negative", k.source(), c.final_softcap);
  std::string activation = "gelu_pytorch_tanh";
  RECUR_RETURN_IF_ERROR(k.get_opt("hidden_activation", activation));
  if (activation != "gelu_pytorch_tanh")
    return unsupported("{}: 'hidden_activation' '{}' (recur's gemma3 runs gelu_pytorch_tanh)", k.source(), activation);
  c.sliding_window = 4096;
  RECUR_RETURN_IF_ERROR(k.get_opt("sliding_window", c.sliding_window));
  if (c.sliding_window < 0) return parse_error("{}: 'sliding_window' {} is negative", k.source(), c.sliding_window);
  int pattern = kGemma3Pattern;
  RECUR_RETURN_IF_ERROR(k.get_opt("sliding_window_pattern", pattern));
  if (pattern == 1) c.sliding_window = 0;  // every layer global (the converter writes no window)
  else if (pattern != kGemma3Pattern)
    return unsupported("{}: 'sliding_window_pattern' is {} (llama.cpp's gemma3 slides five layers of each six: 6, or 1 "
                       "for none)",
                       k.source(), pattern);
  if (const json* types = k.find("layer_types"); types != nullptr && types->is_array() &&
                                                 std::all_of(types->begin(), types->end(), [](const json& t) { return t == "full_attention"; }))
    c.sliding_window = 0;
  c.sliding_window_pattern = kGemma3Pattern;
  RECUR_RETURN_IF_ERROR(hf_layer_types(k, c.n_layers, "full_attention", "sliding_attention",
                                       [&](int l) { return c.is_sliding_layer(l); },
                                       "llama.cpp's gemma3: layer l slides when l % 6 < 5"));
  RECUR_RETURN_IF_ERROR(hf_gemma3_local_rope(k));
  c.rope_local_theta = c.sliding_window > 0 ? kGemma3LocalTheta : 0.0f;
  // llama.cpp scales queries by 1/sqrt(key_length), but by 1/sqrt(dim / heads) at 62 layers (27B).
  const int want = c.n_layers == 62 && c.n_heads > 0 ? c.dim / c.n_heads : c.head_dim;
  float scalar = 256;
  RECUR_RETURN_IF_ERROR(k.get_opt("query_pre_attn_scalar", scalar));
  if (scalar != float(want))
    return unsupported("{}: 'query_pre_attn_scalar' is {}, expected {} (llama.cpp's gemma3 scales queries by 1/sqrt({}))",
                       k.source(), scalar, want, c.n_layers == 62 ? "hidden_size / num_attention_heads" : "head_dim");
  return ok_status();
}

void hf_write_gemma3(const ModelConfig& c, json& j) {
  if (c.final_softcap > 0) j["final_logit_softcapping"] = c.final_softcap;
  else j["final_logit_softcapping"] = nullptr;
  j["attn_logit_softcapping"] = nullptr;
  j["sliding_window"] = c.sliding_window > 0 ? c.sliding_window : 4096;
  j["sliding_window_pattern"] = c.sliding_window > 0 ? kGemma3Pattern : 1;
  j["layer_types"] = hf_layer_types_list(c.n_layers, "full_attention", "sliding_attention",
                                         [&](int l) { return c.is_sliding_layer(l); });
  j["rope_local_base_freq"] = kGemma3LocalTheta;
  j["query_pre_attn_scalar"] = c.n_layers == 62 && c.n_heads > 0 ? c.dim / c.n_heads : c.head_dim;
  j["hidden_activation"] = "gelu_pytorch_tanh";
}

// Qwen3-Next: gated DeltaNet layers (linear_*) with a gated full-attention layer closing each
// full_attention_interval (or the same pattern as layer_types), partial rotary
// (partial_rotary_factor, truncated to whole dims as the converter does), Qwen2-MoE's keys with
// the top-k renormalised. recur's DeltaNet needs the value head dim equal to the key head dim.
Status hf_qwen3next_keys(const HfKeys& k, ModelConfig& c) {
  RECUR_RETURN_IF_ERROR(hf_qwen_moe_keys(k, c));
  RECUR_RETURN_IF_ERROR(k.refuse_unless("attention_bias", false, "Qwen3-Next's attention has no biases"));
  c.conv_size = 4;
  RECUR_RETURN_IF_ERROR(k.get_opt("linear_conv_kernel_dim", c.conv_size));
  RECUR_RETURN_IF_ERROR(k.get("linear_key_head_dim", c.kda_head_dim));
  RECUR_RETURN_IF_ERROR(k.get("linear_num_key_heads", c.kda_key_heads));
  RECUR_RETURN_IF_ERROR(k.get("linear_num_value_heads", c.kda_heads));
  int value_dim = c.kda_head_dim;
  RECUR_RETURN_IF_ERROR(k.get_opt("linear_value_head_dim", value_dim));
  if (value_dim != c.kda_head_dim)
    return unsupported("{}: 'linear_value_head_dim' {} differs from 'linear_key_head_dim' {} (recur's gated DeltaNet needs "
                       "them equal, as in every released model)",
                       k.source(), value_dim, c.kda_head_dim);
  if (c.kda_key_heads <= 0 || c.kda_heads <= 0 || c.kda_heads % c.kda_key_heads != 0)
    return parse_error("{}: 'linear_num_value_heads' {} must be a positive multiple of 'linear_num_key_heads' {}", k.source(),
                       c.kda_heads, c.kda_key_heads);
  int interval = 4;
  RECUR_RETURN_IF_ERROR(k.get_opt("full_attention_interval", interval));
  if (interval < 1 || interval > 4096)
    return parse_error("{}: 'full_attention_interval' {} must be in [1, 4096]", k.source(), interval);
  c.layer_pattern = std::string(size_t(interval - 1), 'k') + 'a';
  RECUR_RETURN_IF_ERROR(hf_layer_types(k, c.n_layers, "linear_attention", "full_attention",
                                       [&](int l) { return (l + 1) % interval == 0; },
                                       fmt::format("llama.cpp's qwen3next: layer l is full attention when (l + 1) % "
                                                   "full_attention_interval {} == 0",
                                                   interval)));
  RECUR_ASSIGN_OR_RETURN(const HfRope rope, read_hf_rope(k));  // transformers 5 moves it into rope_parameters
  const float partial = rope.partial_rotary_factor.value_or(0.25f);
  if (!(partial > 0 && partial <= 1))
    return parse_error("{}: 'partial_rotary_factor' {} must be in (0, 1]", k.source(), partial);
  c.rope_dims = int(double(c.head_dim) * double(partial) + 1e-4);  // the converter's int(), past float rounding
  if (c.rope_dims < 2 || c.rope_dims % 2 != 0)
    return unsupported("{}: 'partial_rotary_factor' {} rotates {} dims of head_dim {} (RoPE needs an even count, at least 2)",
                       k.source(), partial, c.rope_dims, c.head_dim);
  return ok_status();
}

void hf_write_qwen3next(const ModelConfig& c, json& j) {
  hf_write_qwen_moe(c, j);
  j["decoder_sparse_step"] = 1;
  j["mlp_only_layers"] = json::array();
  j["attention_bias"] = false;
  j["linear_conv_kernel_dim"] = c.conv_size;
  j["linear_key_head_dim"] = c.kda_head_dim;
  j["linear_value_head_dim"] = c.kda_head_dim;
  j["linear_num_key_heads"] = c.kda_key_heads;
  j["linear_num_value_heads"] = c.kda_heads;
  const int interval = int(c.layer_pattern.size());
  j["full_attention_interval"] = interval;
  j["layer_types"] = hf_layer_types_list(c.n_layers, "linear_attention", "full_attention",
                                         [&](int l) { return !c.is_kda_layer(l); });
  j["partial_rotary_factor"] = double(c.rotary_dims()) / double(c.head_dim);
}

// The MLA keys DeepSeek-V2/V3 and Kimi-Linear share.
Status hf_mla_keys(const HfKeys& k, ModelConfig& c) {
  RECUR_RETURN_IF_ERROR(k.get_opt("q_lora_rank", c.q_lora_rank));
  RECUR_RETURN_IF_ERROR(k.get("kv_lora_rank", c.kv_lora_rank));
  RECUR_RETURN_IF_ERROR(k.get("qk_nope_head_dim", c.qk_nope_dim));
  RECUR_RETURN_IF_ERROR(k.get("qk_rope_head_dim", c.qk_rope_dim));
  RECUR_RETURN_IF_ERROR(k.get("v_head_dim", c.v_head_dim));
  c.head_dim = c.qk_nope_dim + c.qk_rope_dim;
  c.n_kv_heads = 1;  // MLA caches one latent per token (llama.cpp writes head_count_kv 1)
  c.dense_ffn_dim = c.ffn_dim;
  RECUR_RETURN_IF_ERROR(k.get("moe_intermediate_size", c.ffn_dim));
  RECUR_RETURN_IF_ERROR(k.get_opt("first_k_dense_replace", c.leading_dense_layers));
  RECUR_RETURN_IF_ERROR(k.get_opt("routed_scaling_factor", c.expert_weights_scale));
  int freq = 1;
  RECUR_RETURN_IF_ERROR(k.get_opt("moe_layer_freq", freq));
  if (freq != 1) return unsupported("{}: 'moe_layer_freq' is {} (recur runs every layer after the dense ones sparse)", k.source(), freq);
  return ok_status();
}

void hf_write_mla(const ModelConfig& c, json& j) {
  if (c.q_lora_rank > 0) j["q_lora_rank"] = c.q_lora_rank;
  else j["q_lora_rank"] = nullptr;
  j["kv_lora_rank"] = c.kv_lora_rank;
  j["qk_nope_head_dim"] = c.qk_nope_dim;
  j["qk_rope_head_dim"] = c.qk_rope_dim;
  j["v_head_dim"] = c.v_head_dim;
  j["intermediate_size"] = c.dense_ffn_dim;
  j["moe_intermediate_size"] = c.ffn_dim;
  j["first_k_dense_replace"] = c.leading_dense_layers;
  j["routed_scaling_factor"] = c.expert_weights_scale;
  j["num_key_value_heads"] = c.n_heads;
}

// DeepSeek-V2 / V3: routed experts (softmax or sigmoid scores, the selection bias
// e_score_correction_bias where the checkpoint has it), shared experts, YaRN. Group-limited
// routing (n_group, topk_group) is not applied, as in llama.cpp's deepseek2.
Status hf_deepseek2_keys(const HfKeys& k, ModelConfig& c) {
  RECUR_RETURN_IF_ERROR(hf_mla_keys(k, c));
  RECUR_RETURN_IF_ERROR(k.get("n_routed_experts", c.n_experts));
  RECUR_RETURN_IF_ERROR(k.get("num_experts_per_tok", c.n_experts_used));
  int shared = 0;
  RECUR_RETURN_IF_ERROR(k.get_opt("n_shared_experts", shared));
  c.shared_expert = shared > 0;
  c.shared_ffn_dim = shared * c.ffn_dim;
  c.moe_renormalize = false;
  RECUR_RETURN_IF_ERROR(k.get_opt("norm_topk_prob", c.moe_renormalize));
  std::string scoring = "softmax";
  RECUR_RETURN_IF_ERROR(k.get_opt("scoring_func", scoring));
  if (scoring == "softmax") c.expert_gating = ExpertGating::kSoftmax;
  else if (scoring == "sigmoid") c.expert_gating = ExpertGating::kSigmoid;
  else return unsupported("{}: 'scoring_func' '{}' (recur reads softmax and sigmoid)", k.source(), scoring);
  RECUR_ASSIGN_OR_RETURN(const HfRope rope, read_hf_rope(k));
  if (rope.type == "default") return ok_status();
  if (rope.type != "yarn")
    return unsupported("{}: {} type '{}' (recur reads yarn for deepseek2)", k.source(), rope.where, rope.type);
  const HfKeys& r = *rope.scaling;
  RECUR_RETURN_IF_ERROR(r.get_opt("factor", c.rope_yarn_factor));
  RECUR_RETURN_IF_ERROR(r.get("original_max_position_embeddings", c.rope_original_context));
  float mscale_all_dim = 0, beta_fast = 32, beta_slow = 1;
  RECUR_RETURN_IF_ERROR(r.get_opt("mscale_all_dim", mscale_all_dim));
  RECUR_RETURN_IF_ERROR(r.get_opt("beta_fast", beta_fast));
  RECUR_RETURN_IF_ERROR(r.get_opt("beta_slow", beta_slow));
  if (beta_fast != 32 || beta_slow != 1)
    return unsupported("{}: rope_scaling beta_fast {} / beta_slow {} (recur's GGUF rows carry 32 / 1)", k.source(), beta_fast,
                       beta_slow);
  c.rope_yarn_log_mul = 0.1f * mscale_all_dim;  // llama.cpp's converter
  return ok_status();
}

void hf_write_deepseek2(const ModelConfig& c, json& j) {
  hf_write_mla(c, j);
  j["n_routed_experts"] = c.n_experts;
  j["num_experts_per_tok"] = c.n_experts_used;
  j["n_shared_experts"] = c.shared_expert ? c.shared_width() / c.ffn_dim : 0;
  j["norm_topk_prob"] = c.moe_renormalize;
  j["scoring_func"] = c.expert_gating == ExpertGating::kSigmoid ? "sigmoid" : "softmax";
  j["topk_method"] = c.expert_gating == ExpertGating::kSigmoid ? "noaux_tc" : "greedy";
  if (c.rope_yarn_factor > 1)
    j["rope_scaling"] = {{"type", "yarn"},
                         {"factor", c.rope_yarn_factor},
                         {"original_max_position_embeddings", c.rope_original_context},
                         {"mscale_all_dim", c.rope_yarn_log_mul / 0.1f},
                         {"mscale", 1.0},
                         {"beta_fast", 32},
                         {"beta_slow", 1}};
}

// Kimi-Linear: KDA layers except linear_attn_config.full_attn_layers (1-based), MLA without RoPE
// there, deepseek2's MoE with a renormalized top-k.
Status hf_kimi_linear_keys(const HfKeys& k, ModelConfig& c) {
  RECUR_RETURN_IF_ERROR(hf_mla_keys(k, c));
  RECUR_RETURN_IF_ERROR(k.get("num_experts", c.n_experts));
  RECUR_RETURN_IF_ERROR(k.get_opt("num_experts_per_tok", c.n_experts_used));
  RECUR_RETURN_IF_ERROR(k.has("num_experts_per_tok") ? ok_status() : k.get("num_experts_per_token", c.n_experts_used));
  int shared = 0;
  RECUR_RETURN_IF_ERROR(k.get_opt("num_shared_experts", shared));
  c.shared_expert = shared > 0;
  c.shared_ffn_dim = shared * c.ffn_dim;
  RECUR_RETURN_IF_ERROR(k.refuse_unless("moe_renormalize", true, "llama.cpp's kimi-linear renormalizes the top-k"));
  std::string activation = "sigmoid";
  RECUR_RETURN_IF_ERROR(k.get_opt("moe_router_activation_func", activation));
  if (activation == "softmax") c.expert_gating = ExpertGating::kSoftmax;
  else if (activation == "sigmoid") c.expert_gating = ExpertGating::kSigmoid;
  else return unsupported("{}: 'moe_router_activation_func' '{}' (softmax or sigmoid)", k.source(), activation);
  const json* la = k.find("linear_attn_config");
  if (la == nullptr || !la->is_object()) return parse_error("{}: missing object 'linear_attn_config'", k.source());
  const HfKeys l(*la, k.source(), "linear_attn_config.");
  RECUR_RETURN_IF_ERROR(l.get("head_dim", c.kda_head_dim));
  RECUR_RETURN_IF_ERROR(l.get_opt("short_conv_kernel_size", c.conv_size));
  int heads = c.n_heads;
  RECUR_RETURN_IF_ERROR(l.get_opt("num_heads", heads));
  if (heads != c.n_heads)
    return unsupported("{}: linear_attn_config.num_heads {} differs from num_attention_heads {} (llama.cpp's kimi-linear "
                       "shares them)",
                       k.source(), heads, c.n_heads);
  c.kda_heads = c.kda_key_heads = c.n_heads;
  const json* full = l.find("full_attn_layers");
  if (full == nullptr || !full->is_array())
    return parse_error("{}: missing array 'linear_attn_config.full_attn_layers' (1-based layer numbers)", k.source());
  c.layer_pattern.assign(size_t(std::max(c.n_layers, 0)), 'k');
  for (const json& v : *full) {
    if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > c.n_layers)
      return parse_error("{}: linear_attn_config.full_attn_layers entry {} is not a layer number 1..{}", k.source(), v.dump(),
                         c.n_layers);
    c.layer_pattern[size_t(v.get<int64_t>() - 1)] = 'a';
  }
  return ok_status();
}

void hf_write_kimi_linear(const ModelConfig& c, json& j) {
  hf_write_mla(c, j);
  j["num_experts"] = c.n_experts;
  j["num_experts_per_token"] = c.n_experts_used;
  j["num_shared_experts"] = c.shared_expert ? c.shared_width() / c.ffn_dim : 0;
  j["moe_renormalize"] = true;
  j["moe_router_activation_func"] = c.expert_gating == ExpertGating::kSigmoid ? "sigmoid" : "softmax";
  json full = json::array(), kda = json::array();
  for (int l = 0; l < c.n_layers; ++l) (c.is_kda_layer(l) ? kda : full).push_back(l + 1);
  j["linear_attn_config"] = {{"head_dim", c.kda_head_dim},       {"num_heads", c.kda_heads},
                             {"short_conv_kernel_size", c.conv_size}, {"full_attn_layers", full},
                             {"kda_layers", kda}};
  j["mla_use_nope"] = true;
}

constexpr HfTensorRules kHfPlain{};
constexpr HfTensorRules kHfLlamaTensors{.permute_qk = true};
constexpr HfTensorRules kHfGemmaTensors{.norm_plus_one = true, .post_attention_norm_names = true};
constexpr HfTensorRules kHfGemmaMultimodalTensors{.norm_plus_one = true, .post_attention_norm_names = true, .multimodal = true};
// Gemma3TextConfig's defaults (transformers' configuration_gemma3.py) but for the RoPE keys, which
// hf_gemma3_keys defaults itself (the two RoPE spellings must not seem to conflict).
constexpr std::string_view kGemma3TextDefaults = R"({"vocab_size": 262208, "hidden_size": 2304, "intermediate_size": 9216,
  "num_hidden_layers": 26, "num_attention_heads": 8, "num_key_value_heads": 4, "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 131072, "rms_norm_eps": 1e-6,
  "bos_token_id": 2, "eos_token_id": 1, "tie_word_embeddings": true, "query_pre_attn_scalar": 256,
  "sliding_window": 4096, "sliding_window_pattern": 6})";
// Qwen3-Next's norms are zero-centred (1 + w) but for the DeltaNet's gated norm (linear_attn.norm).
constexpr HfTensorRules kHfQwen3NextTensors{.norm_plus_one = true, .post_attention_norm_names = true, .dropped_prefix = "mtp."};

const std::array<HfArchitecture, 14> kHfArchitectures{{
    {"LlamaForCausalLM", Arch::kLlama, hf_llama_keys, hf_write_nothing, kHfLlamaTensors},
    {"MistralForCausalLM", Arch::kLlama, hf_llama_keys, hf_write_nothing, kHfLlamaTensors},
    {"Qwen2ForCausalLM", Arch::kQwen2, hf_dense_keys, hf_write_nothing, kHfPlain},
    {"Qwen3ForCausalLM", Arch::kQwen3, hf_dense_keys, hf_write_nothing, kHfPlain},
    {"Qwen2MoeForCausalLM", Arch::kQwen2Moe, hf_qwen_moe_keys, hf_write_qwen_moe, kHfPlain},
    {"Qwen3MoeForCausalLM", Arch::kQwen3Moe, hf_qwen_moe_keys, hf_write_qwen_moe, kHfPlain},
    {"Phi3ForCausalLM", Arch::kPhi3, hf_phi3_keys, hf_write_nothing, kHfPlain},
    {"Gemma2ForCausalLM", Arch::kGemma2, hf_gemma2_keys, hf_write_gemma2, kHfGemmaTensors},
    {"Gemma3ForCausalLM", Arch::kGemma3, hf_gemma3_keys, hf_write_gemma3, kHfGemmaTensors, true, "", kGemma3TextDefaults},
    // Gemma 3 as released (4B, 12B, 27B): the text model of the multimodal checkpoint.
    {"Gemma3ForConditionalGeneration", Arch::kGemma3, hf_gemma3_keys, hf_write_gemma3, kHfGemmaMultimodalTensors, true,
     "text_config", kGemma3TextDefaults},
    {"DeepseekV2ForCausalLM", Arch::kDeepseek2, hf_deepseek2_keys, hf_write_deepseek2, kHfPlain},
    {"DeepseekV3ForCausalLM", Arch::kDeepseek2, hf_deepseek2_keys, hf_write_deepseek2, kHfPlain},
    {"KimiLinearForCausalLM", Arch::kKimiLinear, hf_kimi_linear_keys, hf_write_kimi_linear, kHfPlain},
    {"Qwen3NextForCausalLM", Arch::kQwen3Next, hf_qwen3next_keys, hf_write_qwen3next, kHfQwen3NextTensors},
}};

// The ids in bos_token_id / eos_token_id: an integer, or a list whose first entry is taken.
Status hf_token_id(const HfKeys& k, std::string_view key, int& out) {
  const json* v = k.find(key);
  if (v == nullptr) return ok_status();
  if (v->is_array() && !v->empty()) v = &(*v)[0];
  if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > INT32_MAX)
    return parse_error("{}: '{}' must be a token id (or a list of them), got {}", k.source(), key, v->dump());
  out = int(v->get<int64_t>());
  return ok_status();
}

}  // namespace

std::span<const HfArchitecture> hf_architectures() { return kHfArchitectures; }

std::string supported_hf_architectures() {
  std::string out;
  for (const HfArchitecture& a : hf_architectures()) out += (out.empty() ? "" : ", ") + std::string(a.name);
  return out;
}

Result<const HfArchitecture*> find_hf_architecture(std::string_view name, std::string_view source) {
  for (const HfArchitecture& a : hf_architectures())
    if (a.name == name) return &a;
  return unsupported("{}: architecture '{}' is not supported (recur reads Hugging Face checkpoints of {})", source, name,
                     supported_hf_architectures());
}

const HfArchitecture* hf_architecture_of(Arch arch) {
  for (const HfArchitecture& a : hf_architectures())
    if (a.arch == arch) return &a;
  return nullptr;
}

const HfArchitecture* hf_multimodal_architecture_of(Arch arch) {
  for (const HfArchitecture& a : hf_architectures())
    if (a.arch == arch && !a.text_config.empty()) return &a;
  return nullptr;
}

namespace {

// The text model's keys: the object `row.text_config` names (or the top level), over the row's
// defaults (absent or null keys take them, as the config class's constructor does).
Result<json> hf_text_keys(const json& top, const HfArchitecture& row, std::string_view source) {
  const json* text = &top;
  if (!row.text_config.empty()) {
    auto it = top.find(std::string(row.text_config));
    if (it == top.end() || !it->is_object())
      return parse_error("{}: '{}' must be an object holding the text model's settings ({} nests them there), got {}", source,
                         row.text_config, row.name, it == top.end() ? "none" : it->dump());
    text = &*it;
  }
  if (row.defaults.empty()) return *text;
  json merged = json::parse(row.defaults);
  for (const auto& [key, value] : text->items())
    if (!value.is_null()) merged[key] = value;
  return merged;
}

}  // namespace

Result<HfModelConfig> read_hf_config(std::string_view text, std::string_view source) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return parse_error("{}: not a JSON object", source);
  const HfKeys top(j, source);
  // No 'architectures' (older configs): LlamaForCausalLM, as recur read them before the table.
  std::string name = "LlamaForCausalLM";
  if (const json* names = top.find("architectures")) {
    if (!names->is_array() || names->empty() || !(*names)[0].is_string())
      return parse_error("{}: 'architectures' must be a list naming the model class, e.g. [\"LlamaForCausalLM\"]", source);
    name = (*names)[0].get<std::string>();
  }
  HfModelConfig out;
  RECUR_ASSIGN_OR_RETURN(out.row, find_hf_architecture(name, source));
  RECUR_ASSIGN_OR_RETURN(const json text_keys, hf_text_keys(j, *out.row, source));
  // Errors name the nested object: "dir/config.json (text_config): missing 'hidden_size'".
  const std::string text_source =
      out.row->text_config.empty() ? std::string(source) : fmt::format("{} ({})", source, out.row->text_config);
  const HfKeys k(text_keys, text_source);
  ModelConfig& c = out.config;
  c.arch = out.row->arch;
  architecture(c.arch).features(c);
  RECUR_RETURN_IF_ERROR(k.get("hidden_size", c.dim));
  RECUR_RETURN_IF_ERROR(k.get("num_hidden_layers", c.n_layers));
  RECUR_RETURN_IF_ERROR(k.get("num_attention_heads", c.n_heads));
  c.n_kv_heads = c.n_heads;
  RECUR_RETURN_IF_ERROR(k.get_opt("num_key_value_heads", c.n_kv_heads));
  RECUR_RETURN_IF_ERROR(k.get("intermediate_size", c.ffn_dim));
  RECUR_RETURN_IF_ERROR(k.get("vocab_size", c.vocab));
  RECUR_RETURN_IF_ERROR(k.get_opt("max_position_embeddings", c.context));
  c.head_dim = c.n_heads > 0 ? c.dim / c.n_heads : 0;
  RECUR_RETURN_IF_ERROR(k.get_opt("head_dim", c.head_dim));
  RECUR_RETURN_IF_ERROR(k.get_opt("rms_norm_eps", c.rms_eps));
  RECUR_ASSIGN_OR_RETURN(const HfRope global_rope, read_hf_rope(k, {.one_rope = !out.row->rope_per_layer_type}));
  if (global_rope.theta) c.rope_theta = *global_rope.theta;
  RECUR_RETURN_IF_ERROR(k.get_opt("tie_word_embeddings", c.tied_embeddings));
  // Bounds before anything is sized by them (the vocabulary's token list, Kimi's layer pattern).
  constexpr int kMaxVocab = 1 << 24, kMaxLayers = 4096;
  if (c.vocab > kMaxVocab) return parse_error("{}: 'vocab_size' {} exceeds recur's limit of {}", source, c.vocab, kMaxVocab);
  if (c.n_layers > kMaxLayers)
    return parse_error("{}: 'num_hidden_layers' {} exceeds recur's limit of {}", source, c.n_layers, kMaxLayers);
  RECUR_RETURN_IF_ERROR(hf_token_id(k, "bos_token_id", out.bos));
  RECUR_RETURN_IF_ERROR(hf_token_id(k, "eos_token_id", out.eos));
  if (!out.row->text_config.empty()) {  // the model's own ids (released Gemma 3: eos [1, 106]) stand beside text_config
    RECUR_RETURN_IF_ERROR(hf_token_id(top, "bos_token_id", out.bos));
    RECUR_RETURN_IF_ERROR(hf_token_id(top, "eos_token_id", out.eos));
  }
  RECUR_RETURN_IF_ERROR(out.row->read(k, c));
  if (auto s = c.validate(); !s) return unexpected(s.error().with_context(text_source));
  if (out.row->arch != Arch::kLlama) return out;
  RECUR_ASSIGN_OR_RETURN(const HfRope hf_rope, read_hf_rope(k));
  if (hf_rope.type == "llama3") {
    const HfKeys& r = *hf_rope.scaling;
    Llama3Rope rope;
    float f = float(rope.factor), lo = float(rope.low_freq_factor), hi = float(rope.high_freq_factor);
    int original = int(rope.original_context);
    RECUR_RETURN_IF_ERROR(r.get_opt("factor", f));
    RECUR_RETURN_IF_ERROR(r.get_opt("low_freq_factor", lo));
    RECUR_RETURN_IF_ERROR(r.get_opt("high_freq_factor", hi));
    RECUR_RETURN_IF_ERROR(r.get_opt("original_max_position_embeddings", original));
    if (!(f > 0) || !(lo > 0) || !(hi > lo) || original <= 0)
      return parse_error("{}: {} llama3 factor {}, low {} / high {} frequency factors, original context {}: "
                         "need positive values and high > low",
                         source, hf_rope.where, f, lo, hi, original);
    out.rope_freqs = llama3_rope_divisors(c.head_dim, c.rope_theta, {f, lo, hi, double(original)});
  }
  return out;
}

namespace {

// A multimodal row's config.json around the text model's keys `text`: those at the config class's
// defaults left out (transformers' save_pretrained writes the difference; Gemma 3's RoPE bases
// included), a small vision_config (recur reads none of it), the model's eos id beside them.
json hf_multimodal_config(const HfArchitecture& row, json text, int eos) {
  text.erase("architectures");
  const json defaults = json::parse(row.defaults);
  for (const auto& [key, value] : defaults.items())
    if (auto it = text.find(key); it != text.end() && *it == value) text.erase(it);
  if (text.value("rope_theta", 0.0) == double(kGemma3GlobalTheta)) text.erase("rope_theta");
  if (text.value("rope_local_base_freq", 0.0) == double(kGemma3LocalTheta)) text.erase("rope_local_base_freq");
  text["model_type"] = "gemma3_text";
  json j = {{"architectures", {std::string(row.name)}},
            {"model_type", "gemma3"},
            {std::string(row.text_config), text},
            {"vision_config",
             {{"model_type", "siglip_vision_model"}, {"hidden_size", 8}, {"intermediate_size", 16}, {"num_hidden_layers", 1},
              {"num_attention_heads", 2}, {"image_size", 4}, {"patch_size", 2}}},
            {"mm_tokens_per_image", 4}};
  if (eos >= 0) j["eos_token_id"] = {eos};
  return j;
}

}  // namespace

std::string write_hf_config(const ModelConfig& c, int bos, int eos, const HfArchitecture* row) {
  if (row == nullptr) row = hf_architecture_of(c.arch);
  json j = json::object();
  j["architectures"] = {std::string(row != nullptr ? row->name : "")};
  j["hidden_size"] = c.dim;
  j["num_hidden_layers"] = c.n_layers;
  j["num_attention_heads"] = c.n_heads;
  j["num_key_value_heads"] = c.n_kv_heads;
  j["intermediate_size"] = c.ffn_dim;
  j["vocab_size"] = c.vocab;
  j["max_position_embeddings"] = c.context;
  j["head_dim"] = c.head_dim;
  j["rms_norm_eps"] = c.rms_eps;
  j["rope_theta"] = c.rope_theta;
  j["tie_word_embeddings"] = c.tied_embeddings;
  if (c.rope_freq_scale != 1.0f) j["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 1.0f / c.rope_freq_scale}};
  if (bos >= 0) j["bos_token_id"] = bos;
  if (eos >= 0) j["eos_token_id"] = eos;
  if (row != nullptr) row->write(c, j);
  if (row != nullptr && !row->text_config.empty()) return hf_multimodal_config(*row, std::move(j), eos).dump(2);
  return j.dump(2);
}

}  // namespace recur
