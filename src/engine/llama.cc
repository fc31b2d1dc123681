#include "engine/llama.h"

#include <cmath>

#include <fmt/format.h>

#include "core/thread_pool.h"
#include "engine/layers.h"

namespace recur {

Result<std::unique_ptr<LlamaModel>> LlamaModel::load(const std::string& path) {
  RECUR_ASSIGN_OR_RETURN(gguf::File file, gguf::read(path));
  return from_file(std::move(file));
}

Result<std::unique_ptr<LlamaModel>> LlamaModel::from_file(gguf::File file) {
  std::unique_ptr<LlamaModel> m(new LlamaModel());
  m->file_ = std::move(file);
  const gguf::File& f = m->file_;
  RECUR_ASSIGN_OR_RETURN(m->config_, ModelConfig::from_gguf(f));
  const ModelConfig& c = m->config_;
  if (c.arch != Arch::kLlama) return invalid_argument("{}: architecture is {}, not llama", f.source(), arch_name(c.arch));
  RECUR_ASSIGN_OR_RETURN(Vocabulary vocab, Vocabulary::from_gguf(f));
  if (int(vocab.tokens.size()) != c.vocab)
    return parse_error("{}: {} tokens in the vocabulary but vocab_size is {}", f.source(), vocab.tokens.size(), c.vocab);
  RECUR_ASSIGN_OR_RETURN(m->tokenizer_, Tokenizer::create(std::move(vocab)));

  const int64_t q_dim = int64_t(c.n_heads) * c.head_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  RECUR_ASSIGN_OR_RETURN(m->token_embedding, bind_weight(f, "token_embd.weight", c.vocab, c.dim));
  RECUR_ASSIGN_OR_RETURN(m->output_norm, bind_weight(f, "output_norm.weight", 1, c.dim));
  if (c.tied_embeddings) m->output = m->token_embedding;
  else {
    RECUR_ASSIGN_OR_RETURN(m->output, bind_weight(f, "output.weight", c.vocab, c.dim));
  }
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("blk.{}.", l);
    LlamaLayerWeights L;
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
  return m;
}

Result<std::unique_ptr<Session>> LlamaModel::new_session(ThreadPool& pool, int max_tokens, const Config&) const {
  if (max_tokens <= 0 || max_tokens > config_.context)
    return invalid_argument("session of {} tokens (the context is {})", max_tokens, config_.context);
  return std::unique_ptr<Session>(new LlamaSession(*this, pool, max_tokens));
}

LlamaSession::LlamaSession(const LlamaModel& model, ThreadPool& pool, int max_tokens)
    : model_(model), pool_(pool), max_tokens_(max_tokens) {
  const ModelConfig& c = model.config();
  const size_t q_dim = size_t(c.n_heads) * c.head_dim, kv_dim = size_t(c.n_kv_heads) * c.head_dim;
  x_.resize(c.dim);
  x2_.resize(c.dim);
  norm_w_.resize(c.dim);
  xb_.resize(std::max<size_t>(c.dim, q_dim));
  q_.resize(q_dim);
  k_.resize(kv_dim);
  v_.resize(kv_dim);
  att_.resize(size_t(c.n_heads) * max_tokens);
  hb_.resize(c.ffn_dim);
  hb2_.resize(c.ffn_dim);
  logits_.resize(c.vocab);
  key_cache_.resize(size_t(c.n_layers) * max_tokens * kv_dim);
  value_cache_.resize(size_t(c.n_layers) * max_tokens * kv_dim);
}

void LlamaSession::attention(int layer) {
  const ModelConfig& c = model_.config();
  const size_t kv_dim = size_t(c.n_kv_heads) * c.head_dim, layer_base = size_t(layer) * max_tokens_ * kv_dim;
  attention_decode(q_.data(), key_cache_.data() + layer_base, value_cache_.data() + layer_base, c.n_heads,
                   c.n_kv_heads, c.head_dim, pos_ + 1, xb_.data(), att_.data(), pool_);
}

Result<std::span<const float>> LlamaSession::step(TokenId token) {
  const ModelConfig& c = model_.config();
  if (token < 0 || token >= c.vocab) return invalid_argument("token {} outside the vocabulary of {}", token, c.vocab);
  if (pos_ >= max_tokens_) return invalid_argument("sequence is full ({} tokens)", max_tokens_);
  const int dim = c.dim, kv_dim = c.n_kv_heads * c.head_dim;
  model_.token_embedding.dequantize_row(token, x_.data());

  for (int l = 0; l < c.n_layers; ++l) {
    const LlamaLayerWeights& L = model_.layers[size_t(l)];
    rmsnorm(xb_.data(), x_.data(), L.attn_norm, dim, c.rms_eps, norm_w_.data());
    matvec(L.wq, xb_.data(), q_.data(), pool_);
    matvec(L.wk, xb_.data(), k_.data(), pool_);
    matvec(L.wv, xb_.data(), v_.data(), pool_);
    rope_interleaved(q_.data(), c.n_heads, c.head_dim, pos_, c.rope_theta);
    rope_interleaved(k_.data(), c.n_kv_heads, c.head_dim, pos_, c.rope_theta);
    size_t at = (size_t(l) * max_tokens_ + pos_) * kv_dim;
    std::copy(k_.begin(), k_.end(), key_cache_.begin() + long(at));
    std::copy(v_.begin(), v_.end(), value_cache_.begin() + long(at));
    attention(l);
    matvec(L.wo, xb_.data(), x2_.data(), pool_);
    for (int i = 0; i < dim; ++i) x_[i] += x2_[i];

    rmsnorm(xb_.data(), x_.data(), L.ffn_norm, dim, c.rms_eps, norm_w_.data());
    matvec(L.w_gate, xb_.data(), hb_.data(), pool_);
    matvec(L.w_up, xb_.data(), hb2_.data(), pool_);
    swiglu(hb_.data(), hb2_.data(), c.ffn_dim);
    matvec(L.w_down, hb_.data(), xb_.data(), pool_);
    for (int i = 0; i < dim; ++i) x_[i] += xb_[i];
    if (observer_) observer_(l, x_);
  }
  rmsnorm(xb_.data(), x_.data(), model_.output_norm, dim, c.rms_eps, norm_w_.data());
  matvec(model_.output, xb_.data(), logits_.data(), pool_);
  ++pos_;
  return std::span<const float>(logits_);
}

}  // namespace recur
