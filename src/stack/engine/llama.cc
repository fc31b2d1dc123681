#include "engine/llama.h"

#include <fmt/format.h>

namespace recur {

Result<std::unique_ptr<LlamaModel>> LlamaModel::load(const std::string& path) {
  RECUR_ASSIGN_OR_RETURN(gguf::File file, gguf::read(path));
  return from_file(std::move(file));
}

Result<std::unique_ptr<LlamaModel>> LlamaModel::from_file(gguf::File file, const ModelLoadOptions& options) {
  std::unique_ptr<LlamaModel> m(new LlamaModel());
  RECUR_RETURN_IF_ERROR(m->bind_common(std::move(file), Arch::kLlama));
  const gguf::File& f = m->file_;
  const ModelConfig& c = m->config_;
  const int64_t q_dim = int64_t(c.n_heads) * c.head_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    LayerWeights L;
    RECUR_ASSIGN_OR_RETURN(L.attn_norm, bind_weight(f, p + "attn_norm.weight", 1, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.wq, bind_weight(f, p + "attn_q.weight", q_dim, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.wk, bind_weight(f, p + "attn_k.weight", kv_dim, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.wv, bind_weight(f, p + "attn_v.weight", kv_dim, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.wo, bind_weight(f, p + "attn_output.weight", c.dim, q_dim));
    RECUR_ASSIGN_OR_RETURN(L.ffn_norm, bind_weight(f, p + "ffn_norm.weight", 1, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.w_gate, bind_weight(f, p + "ffn_gate.weight", c.ffn_dim, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.w_up, bind_weight(f, p + "ffn_up.weight", c.ffn_dim, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.w_down, bind_weight(f, p + "ffn_down.weight", c.dim, c.ffn_dim));
    m->layers.push_back(std::move(L));
  }
  RECUR_RETURN_IF_ERROR(m->regroup_weights(options));
  return m;
}

Result<std::unique_ptr<Session>> LlamaModel::reference_session(int) const {
  return unsupported("engine.numerics=f64_reference: llama runs native only (the float64 reference is the hybrid's)");
}

}  // namespace recur
