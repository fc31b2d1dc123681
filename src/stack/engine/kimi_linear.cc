#include "engine/kimi_linear.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/deepseek2.h"
#include "engine/layer_binding.h"
#include "engine/reference/mla_reference.h"

namespace recur {

namespace {

// A short-convolution weight {d_conv, 1, channels} (or with a trailing 1) as [channels, d_conv].
Result<Weight> bind_conv(const gguf::File& f, const std::string& name, int64_t channels, int64_t taps) {
  const gguf::TensorInfo* t = f.tensor(name);
  if (t == nullptr) return not_found("{}: tensor '{}' is missing", f.source(), name);
  const std::vector<uint64_t> three{uint64_t(taps), 1, uint64_t(channels)}, four{uint64_t(taps), 1, uint64_t(channels), 1};
  if (t->dims != three && t->dims != four)
    return parse_error("{}: tensor '{}' (info at byte {}) has shape [{}], expected [{}, 1, {}] (or a trailing 1)",
                       f.source(), name, t->info_position, fmt::join(t->dims, ", "), taps, channels);
  return Weight{name, t->type, channels, taps, t->data};
}

// ssm_a holds -exp(A_log) per head ({1, heads} or {1, heads, 1, 1}); the KDA kernel takes A_log.
Result<Weight> bind_a_log(const gguf::File& f, const std::string& name, int64_t heads,
                          std::vector<std::vector<float>>& storage) {
  const gguf::TensorInfo* t = f.tensor(name);
  if (t == nullptr) return not_found("{}: tensor '{}' is missing", f.source(), name);
  if (t->elements() != uint64_t(heads) || t->dims.empty() || t->dims[0] != 1)
    return parse_error("{}: tensor '{}' (info at byte {}) has shape [{}], expected [1, {}]", f.source(), name,
                       t->info_position, fmt::join(t->dims, ", "), heads);
  const Weight a{name, t->type, 1, heads, t->data};
  std::vector<float> log_a(static_cast<size_t>(heads));
  a.dequantize_row(0, log_a.data());
  for (int64_t h = 0; h < heads; ++h) {
    if (!(log_a[size_t(h)] < 0))
      return parse_error("{}: tensor '{}' head {} is {}; -exp(A_log) must be negative", f.source(), name, h,
                         log_a[size_t(h)]);
    log_a[size_t(h)] = std::log(-log_a[size_t(h)]);
  }
  storage.push_back(std::move(log_a));
  return Weight{name + " (A_log)", gguf::TensorType::kF32, 1, heads,
                reinterpret_cast<const std::byte*>(storage.back().data())};
}

}  // namespace

Result<std::unique_ptr<Session>> KimiLinearModel::reference_session(int max_tokens) const {
  return new_mla_reference_session(file_, config_, max_tokens);
}

Result<std::unique_ptr<KimiLinearModel>> KimiLinearModel::from_file(gguf::File file, const ModelLoadOptions& options) {
  std::unique_ptr<KimiLinearModel> m(new KimiLinearModel());
  RECUR_RETURN_IF_ERROR(m->bind_common(std::move(file), Arch::kKimiLinear));
  const gguf::File& f = m->file_;
  const ModelConfig& c = m->config_;
  const int64_t K = c.kda_head_dim, d_inner = int64_t(c.kda_heads) * K;
  m->f32_.reserve(size_t(2 * c.n_layers));  // the weights view these vectors' buffers
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    const LayerTensors bind(f, p);
    LayerWeights L;
    L.kda = c.is_kda_layer(l);
    RECUR_RETURN_IF_ERROR(bind(L.attn_norm, "attn_norm.weight", 1, c.dim));
    RECUR_RETURN_IF_ERROR(bind(L.ffn_norm, "ffn_norm.weight", 1, c.dim));
    if (L.kda) {
      RECUR_RETURN_IF_ERROR(bind(L.wq, "attn_q.weight", d_inner, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wk, "attn_k.weight", d_inner, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wv, "attn_v.weight", d_inner, c.dim));
      RECUR_ASSIGN_OR_RETURN(L.conv_q, bind_conv(f, p + "ssm_conv1d_q.weight", d_inner, c.conv_size));
      RECUR_ASSIGN_OR_RETURN(L.conv_k, bind_conv(f, p + "ssm_conv1d_k.weight", d_inner, c.conv_size));
      RECUR_ASSIGN_OR_RETURN(L.conv_v, bind_conv(f, p + "ssm_conv1d_v.weight", d_inner, c.conv_size));
      RECUR_RETURN_IF_ERROR(bind(L.wf_a, "ssm_f_a.weight", K, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wf, "ssm_f_b.weight", d_inner, K));
      RECUR_RETURN_IF_ERROR(bind(L.wb, "ssm_beta.weight", c.kda_heads, c.dim));
      RECUR_ASSIGN_OR_RETURN(L.a_log, bind_a_log(f, p + "ssm_a", c.kda_heads, m->f32_));
      RECUR_RETURN_IF_ERROR(bind(L.dt_bias, "ssm_dt.bias", 1, d_inner));
      RECUR_RETURN_IF_ERROR(bind(L.out_gate_a, "ssm_g_a.weight", K, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.out_gate, "ssm_g_b.weight", d_inner, K));
      RECUR_RETURN_IF_ERROR(bind(L.out_norm, "ssm_norm.weight", 1, K));
      RECUR_RETURN_IF_ERROR(bind(L.wo, "attn_output.weight", c.dim, d_inner));
    } else {
      RECUR_RETURN_IF_ERROR(bind_mla_attention(f, c, p, L, m->f32_));
    }
    RECUR_RETURN_IF_ERROR(bind_ffn_weights(f, c, p, l, L));
    m->layers.push_back(std::move(L));
  }
  RECUR_RETURN_IF_ERROR(m->regroup_weights(options));
  return m;
}

}  // namespace recur
