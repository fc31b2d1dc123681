#include "engine/llama.h"

#include <cmath>

#include <fmt/format.h>

#include "core/thread_pool.h"

namespace recur {
namespace {

void rmsnorm(float* out, const float* x, const Weight& w, int n, float eps, float* scratch) {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  float inv = 1.0f / std::sqrt(float(ss / n) + eps);
  w.dequantize_row(0, scratch);
  for (int i = 0; i < n; ++i) out[i] = x[i] * inv * scratch[i];
}

// GGUF llama RoPE: consecutive pairs (x[2i], x[2i+1]) rotate by pos * theta^(-2i/d).
void rope(float* v, int heads, int head_dim, int pos, float theta) {
  for (int h = 0; h < heads; ++h) {
    float* x = v + h * head_dim;
    for (int i = 0; i < head_dim; i += 2) {
      float freq = std::pow(theta, -float(i) / float(head_dim));
      float a = float(pos) * freq, c = std::cos(a), s = std::sin(a);
      float x0 = x[i], x1 = x[i + 1];
      x[i] = x0 * c - x1 * s;
      x[i + 1] = x0 * s + x1 * c;
    }
  }
}

}  // namespace

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
  const int hd = c.head_dim, kv_dim = c.n_kv_heads * hd, group = c.n_heads / c.n_kv_heads;
  const float* keys = key_cache_.data() + size_t(layer) * max_tokens_ * kv_dim;
  const float* values = value_cache_.data() + size_t(layer) * max_tokens_ * kv_dim;
  const float scale = 1.0f / std::sqrt(float(hd));
  pool_.parallel_for(c.n_heads, [&](int64_t h0, int64_t h1, int) {
    for (int64_t h = h0; h < h1; ++h) {
      const float* q = q_.data() + h * hd;
      float* att = att_.data() + h * max_tokens_;
      const int64_t kvh = h / group;
      float max_score = -INFINITY;
      for (int t = 0; t <= pos_; ++t) {
        const float* k = keys + size_t(t) * kv_dim + kvh * hd;
        float s = 0;
        for (int i = 0; i < hd; ++i) s += q[i] * k[i];
        att[t] = s * scale;
        max_score = std::max(max_score, att[t]);
      }
      float sum = 0;
      for (int t = 0; t <= pos_; ++t) sum += (att[t] = std::exp(att[t] - max_score));
      float* out = xb_.data() + h * hd;
      std::fill(out, out + hd, 0.0f);
      for (int t = 0; t <= pos_; ++t) {
        const float* v = values + size_t(t) * kv_dim + kvh * hd;
        float a = att[t] / sum;
        for (int i = 0; i < hd; ++i) out[i] += a * v[i];
      }
    }
  });
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
    rope(q_.data(), c.n_heads, c.head_dim, pos_, c.rope_theta);
    rope(k_.data(), c.n_kv_heads, c.head_dim, pos_, c.rope_theta);
    size_t at = (size_t(l) * max_tokens_ + pos_) * kv_dim;
    std::copy(k_.begin(), k_.end(), key_cache_.begin() + long(at));
    std::copy(v_.begin(), v_.end(), value_cache_.begin() + long(at));
    attention(l);
    matvec(L.wo, xb_.data(), x2_.data(), pool_);
    for (int i = 0; i < dim; ++i) x_[i] += x2_[i];

    rmsnorm(xb_.data(), x_.data(), L.ffn_norm, dim, c.rms_eps, norm_w_.data());
    matvec(L.w_gate, xb_.data(), hb_.data(), pool_);
    matvec(L.w_up, xb_.data(), hb2_.data(), pool_);
    for (int i = 0; i < c.ffn_dim; ++i) hb_[i] = hb_[i] / (1.0f + std::exp(-hb_[i])) * hb2_[i];
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
