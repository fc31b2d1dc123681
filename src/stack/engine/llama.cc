#include "engine/llama.h"

#include <fmt/format.h>

#include "engine/layer_binding.h"
#include "engine/reference/hybrid_reference.h"

namespace recur {

Result<std::unique_ptr<LlamaModel>> LlamaModel::load(const std::string& path) {
  RECUR_ASSIGN_OR_RETURN(gguf::File file, gguf::read(path));
  return from_file(std::move(file));
}

Result<std::unique_ptr<LlamaModel>> LlamaModel::from_file(gguf::File file, const ModelLoadOptions& options) {
  std::unique_ptr<LlamaModel> m(new LlamaModel());
  RECUR_ASSIGN_OR_RETURN(const ModelConfig read, ModelConfig::from_gguf(file));
  if (read.arch == Arch::kHybrid)
    return invalid_argument("{}: architecture hybrid is not an attention-only architecture", file.source());
  RECUR_RETURN_IF_ERROR(m->bind_common(std::move(file), read.arch));
  const gguf::File& f = m->file_;
  const ModelConfig& c = m->config_;
  for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"})
    if (f.tensor(name) != nullptr)
      return unsupported("{}: tensor '{}': Phi-3 LongRoPE factors are not supported", f.source(), name);
  // llama.cpp reads rope_freqs.weight for llama only; other rows ignore the tensor as it does.
  if (c.arch == Arch::kLlama && f.tensor("rope_freqs.weight") != nullptr) {
    RECUR_ASSIGN_OR_RETURN(m->rope_freqs, bind_weight(f, "rope_freqs.weight", 1, c.head_dim / 2));
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    LayerWeights L;
    RECUR_ASSIGN_OR_RETURN(L.attn_norm, bind_weight(f, p + "attn_norm.weight", 1, c.dim));
    RECUR_RETURN_IF_ERROR(bind_attention_weights(f, c, p, L));
    RECUR_ASSIGN_OR_RETURN(L.ffn_norm, bind_weight(f, p + "ffn_norm.weight", 1, c.dim));
    RECUR_RETURN_IF_ERROR(bind_ffn_weights(f, c, p, l, L));
    m->layers.push_back(std::move(L));
  }
  // After the tensors, whose shapes name a mis-sized file more clearly.
  if (c.rope_dims != 0 && c.rope_dims != c.head_dim)
    return unsupported("{}: {}.rope.dimension_count {} differs from the head dim {} (partial rotary is not supported)",
                       f.source(), arch_name(c.arch), c.rope_dims, c.head_dim);
  RECUR_RETURN_IF_ERROR(m->regroup_weights(options));
  return m;
}

Result<std::unique_ptr<Session>> LlamaModel::reference_session(int max_tokens) const {
  return new_reference_session(file_, config_, max_tokens);
}

}  // namespace recur
