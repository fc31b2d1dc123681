#include "engine/qwen3next.h"

#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "engine/layer_binding.h"
#include "engine/reference/qwen3next_reference.h"
#include "engine/w8a8.h"

namespace recur {

namespace {

// Rows `rows` of w, in that order, as a weight of the same storage type in memory it owns (the
// rows of a GGUF matrix are whole blocks, so any order of them is a valid matrix; W8A8 rows take
// their scales along and get their compensation anew).
Weight gathered_rows(const Weight& w, const std::vector<int64_t>& rows, std::string name) {
  struct Rows {
    std::vector<std::byte> bytes;
    std::vector<float> scales;
  };
  const size_t rb = w.row_bytes();
  auto owned = std::make_shared<Rows>();
  owned->bytes.resize(rb * rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    std::memcpy(owned->bytes.data() + i * rb, w.data + size_t(rows[i]) * rb, rb);
    if (w.scale != nullptr) owned->scales.push_back(w.scale[rows[i]]);
  }
  Weight out = w;
  out.name = std::move(name);
  out.rows = int64_t(rows.size());
  out.data = owned->bytes.data();
  out.scale = w.scale != nullptr ? owned->scales.data() : nullptr;
  out.storage = std::move(owned);
  if (out.scale != nullptr) refresh_w8a8_compensation(out);
  return out;
}

// The vector weight `name` ([n]) widened to fp32.
Result<std::vector<float>> widened_vector(const gguf::File& f, const std::string& name, int64_t n) {
  RECUR_ASSIGN_OR_RETURN(const Weight w, bind_weight(f, name, 1, n));
  std::vector<float> out(static_cast<size_t>(n));
  w.dequantize_row(0, out.data());
  return out;
}

// An fp32 weight [1, values.size()] over a vector the model keeps.
Weight owned_vector(std::string name, std::vector<float> values, std::vector<std::vector<float>>& storage) {
  storage.push_back(std::move(values));
  return Weight{std::move(name), gguf::TensorType::kF32, 1, int64_t(storage.back().size()),
                reinterpret_cast<const std::byte*>(storage.back().data())};
}

}  // namespace

Status read_qwen3next_keys(const ArchKeys& k, ModelConfig& c) {
  RECUR_RETURN_IF_ERROR(read_moe_keys(k, c));
  int inner = 0, interval = 4;  // llama.cpp's default interval
  RECUR_RETURN_IF_ERROR(k.get("ssm.conv_kernel", c.conv_size));
  RECUR_RETURN_IF_ERROR(k.get("ssm.state_size", c.kda_head_dim));
  RECUR_RETURN_IF_ERROR(k.get("ssm.group_count", c.kda_key_heads));
  RECUR_RETURN_IF_ERROR(k.get("ssm.time_step_rank", c.kda_heads));
  RECUR_RETURN_IF_ERROR(k.get("ssm.inner_size", inner));
  RECUR_RETURN_IF_ERROR(k.get_opt("full_attention_interval", interval));
  const std::string_view src = k.file().source();
  if (interval < 1 || interval > 4096)
    return invalid_argument("{}: qwen3next.full_attention_interval {} must be in [1, 4096]", src, interval);
  if (inner != c.kda_heads * c.kda_head_dim)
    return unsupported("{}: qwen3next.ssm.inner_size {} is not ssm.time_step_rank {} x ssm.state_size {}: recur's "
                       "gated DeltaNet needs the value head dim equal to the key head dim",
                       src, inner, c.kda_heads, c.kda_head_dim);
  // llama.cpp prefers a per-layer array when a file has one; its converter writes the interval.
  if (k.has("attention.recurrent_layers"))
    return unsupported("{}: qwen3next.attention.recurrent_layers (a per-layer pattern) is not read; recur takes "
                       "the layers from qwen3next.full_attention_interval",
                       src);
  c.layer_pattern = std::string(size_t(interval - 1), 'k') + 'a';
  if (c.rope_dims == 0) c.rope_dims = c.head_dim;
  return ok_status();
}

void write_qwen3next_keys(const ModelConfig& c, gguf::Writer& w) {
  using gguf::Value;
  write_moe_keys(c, w);
  const std::string p = "qwen3next.";
  w.set(p + "ssm.conv_kernel", Value::of_u32(uint32_t(c.conv_size)));
  w.set(p + "ssm.state_size", Value::of_u32(uint32_t(c.kda_head_dim)));
  w.set(p + "ssm.group_count", Value::of_u32(uint32_t(c.kda_key_heads)));
  w.set(p + "ssm.time_step_rank", Value::of_u32(uint32_t(c.kda_heads)));
  w.set(p + "ssm.inner_size", Value::of_u32(uint32_t(c.kda_heads * c.kda_head_dim)));
  w.set(p + "full_attention_interval", Value::of_u32(uint32_t(c.layer_pattern.size())));
  w.set(p + "rope.dimension_count", Value::of_u32(uint32_t(c.rotary_dims())));
}

Status validate_qwen3next(const ModelConfig& c) {
  const std::string& lp = c.layer_pattern;
  if (lp.empty() || lp.back() != 'a' || lp.find('a') != lp.size() - 1)
    return invalid_argument("model config: qwen3next's layer pattern '{}' must be k repeated then one a (the "
                            "full-attention interval)",
                            lp);
  if (c.n_experts == 0 || !c.shared_expert)
    return invalid_argument("model config: qwen3next needs experts and its shared expert ({} experts)", c.n_experts);
  const int rd = c.rotary_dims();
  if (rd < 2 || rd % 2 != 0 || rd > c.head_dim)
    return invalid_argument("model config: qwen3next rotates {} dims of each head of {}: they must be even, at least "
                            "2 and at most the head",
                            rd, c.head_dim);
  return ok_status();
}

Result<std::unique_ptr<Session>> Qwen3NextModel::reference_session(int max_tokens) const {
  return new_qwen3next_reference_session(file_, config_, max_tokens);
}

Result<std::unique_ptr<Qwen3NextModel>> Qwen3NextModel::from_file(gguf::File file, const ModelLoadOptions& options) {
  std::unique_ptr<Qwen3NextModel> m(new Qwen3NextModel());
  RECUR_RETURN_IF_ERROR(m->bind_common(std::move(file), Arch::kQwen3Next));
  const gguf::File& f = m->file_;
  const ModelConfig& c = m->config_;
  const int64_t K = c.kda_head_dim, HV = c.kda_heads, G = HV / c.kda_key_heads;
  const int64_t qk = int64_t(c.kda_key_heads) * K, vd = HV * K, conv_dim = 2 * qk + vd;
  m->f32_.reserve(size_t(2 * c.n_layers));  // the weights view these vectors' buffers
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    const LayerTensors bind(f, p);
    LayerWeights L;
    L.kda = c.is_kda_layer(l);
    RECUR_RETURN_IF_ERROR(bind(L.attn_norm, "attn_norm.weight", 1, c.dim));
    RECUR_RETURN_IF_ERROR(bind(L.ffn_norm, "post_attention_norm.weight", 1, c.dim));
    if (L.kda) {
      if (f.tensor(p + "attn_qkv.weight") == nullptr && f.tensor(p + "ssm_in.weight") != nullptr)
        return unsupported("{}: layer {} has the legacy fused '{}ssm_in.weight' of early converters; recur reads "
                           "attn_qkv + attn_gate (convert the model again with current llama.cpp)",
                           f.source(), l, p);
      Weight qkv, conv, ba;
      RECUR_RETURN_IF_ERROR(bind(qkv, "attn_qkv.weight", conv_dim, c.dim));
      L.wq = weight_rows(qkv, 0, qk);
      L.wk = weight_rows(qkv, qk, 2 * qk);
      L.wv = weight_rows(qkv, 2 * qk, conv_dim);
      RECUR_RETURN_IF_ERROR(bind(L.out_gate, "attn_gate.weight", vd, c.dim));
      RECUR_RETURN_IF_ERROR(bind(conv, "ssm_conv1d.weight", conv_dim, c.conv_size));
      L.conv_q = weight_rows(conv, 0, qk);
      L.conv_k = weight_rows(conv, qk, 2 * qk);
      L.conv_v = weight_rows(conv, 2 * qk, conv_dim);
      // ssm_ba: key head j's G beta rows, then its G decay rows; value head h = j G + i.
      RECUR_RETURN_IF_ERROR(bind(ba, "ssm_ba.weight", 2 * HV, c.dim));
      std::vector<int64_t> beta_rows, decay_rows;
      for (int64_t h = 0; h < HV; ++h) {
        beta_rows.push_back(h / G * 2 * G + h % G);
        decay_rows.push_back(h / G * 2 * G + G + h % G);
      }
      L.wb = gathered_rows(ba, beta_rows, p + "ssm_ba.weight (beta)");
      L.wf = gathered_rows(ba, decay_rows, p + "ssm_ba.weight (decay)");
      // ssm_a holds -exp(A_log); the KDA kernel takes A_log.
      RECUR_ASSIGN_OR_RETURN(std::vector<float> a, widened_vector(f, p + "ssm_a", HV));
      for (int64_t h = 0; h < HV; ++h) {
        if (!(a[size_t(h)] < 0))
          return parse_error("{}: tensor '{}ssm_a' head {} is {}; -exp(A_log) must be negative", f.source(), p, h,
                             a[size_t(h)]);
        a[size_t(h)] = std::log(-a[size_t(h)]);
      }
      L.a_log = owned_vector(p + "ssm_a (A_log)", std::move(a), m->f32_);
      // One bias per head, read by the kernel once per channel of the head.
      RECUR_ASSIGN_OR_RETURN(const std::vector<float> dt, widened_vector(f, p + "ssm_dt.bias", HV));
      std::vector<float> dt_wide(static_cast<size_t>(vd));
      for (int64_t i = 0; i < vd; ++i) dt_wide[size_t(i)] = dt[size_t(i / K)];
      L.dt_bias = owned_vector(p + "ssm_dt.bias (per channel)", std::move(dt_wide), m->f32_);
      RECUR_RETURN_IF_ERROR(bind(L.out_norm, "ssm_norm.weight", 1, K));
      RECUR_RETURN_IF_ERROR(bind(L.wo, "ssm_out.weight", c.dim, vd));
    } else {
      RECUR_RETURN_IF_ERROR(bind_attention_weights(f, c, p, L));
    }
    RECUR_RETURN_IF_ERROR(bind_ffn_weights(f, c, p, l, L));
    m->layers.push_back(std::move(L));
  }
  RECUR_RETURN_IF_ERROR(m->regroup_weights(options));
  return m;
}

}  // namespace recur
