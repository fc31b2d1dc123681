#include "engine/hybrid.h"

#include <cmath>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "engine/layer_binding.h"
#include "engine/reference/hybrid_reference.h"
#include "engine/w8a8.h"

namespace recur {

Result<std::unique_ptr<Session>> HybridModel::reference_session(int max_tokens) const {
  return new_reference_session(file_, config_, max_tokens);
}

Result<std::unique_ptr<HybridModel>> HybridModel::from_file(gguf::File file, const ModelLoadOptions& options) {
  std::unique_ptr<HybridModel> m(new HybridModel());
  RECUR_RETURN_IF_ERROR(m->bind_common(std::move(file), Arch::kHybrid));
  const gguf::File& f = m->file_;
  const ModelConfig& c = m->config_;
  const int64_t K = c.kda_head_dim, qk = c.kda_key_heads * K, vd = c.kda_heads * K;
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    const LayerTensors bind(f, p);
    LayerWeights L;
    L.kda = c.is_kda_layer(l);
    RECUR_RETURN_IF_ERROR(bind(L.attn_norm, "attn_norm.weight", 1, c.dim));
    RECUR_RETURN_IF_ERROR(bind(L.ffn_norm, "ffn_norm.weight", 1, c.dim));
    if (L.kda) {
      RECUR_RETURN_IF_ERROR(bind(L.wq, "kda_q.weight", qk, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wk, "kda_k.weight", qk, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.wv, "kda_v.weight", vd, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.conv_q, "kda_conv_q.weight", qk, c.conv_size));
      RECUR_RETURN_IF_ERROR(bind(L.conv_k, "kda_conv_k.weight", qk, c.conv_size));
      RECUR_RETURN_IF_ERROR(bind(L.conv_v, "kda_conv_v.weight", vd, c.conv_size));
      RECUR_RETURN_IF_ERROR(bind(L.wf, "kda_f.weight", vd, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.a_log, "kda_a_log", 1, c.kda_heads));
      RECUR_RETURN_IF_ERROR(bind(L.dt_bias, "kda_dt_bias", 1, vd));
      RECUR_RETURN_IF_ERROR(bind(L.wb, "kda_b.weight", c.kda_heads, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.out_gate, "kda_out_gate.weight", vd, c.dim));
      RECUR_RETURN_IF_ERROR(bind(L.out_norm, "kda_out_norm.weight", 1, K));
      RECUR_RETURN_IF_ERROR(bind(L.wo, "attn_output.weight", c.dim, vd));
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
