#include "engine/reference/llama_session.h"

#include "core/thread_pool.h"
#include "engine/layers.h"
#include "trace/trace.h"

namespace recur {

Result<LlamaLayerShard> shard_llama_layer(const LayerWeights& L, Span heads, Span kv_heads, Span ffn,
                                          int head_dim, int ranks) {
  const int64_t hd = head_dim;
  LlamaLayerShard s;
  s.wq = weight_rows(L.wq, heads.begin * hd, heads.end * hd);
  s.wk = weight_rows(L.wk, kv_heads.begin * hd, kv_heads.end * hd);
  s.wv = weight_rows(L.wv, kv_heads.begin * hd, kv_heads.end * hd);
  s.w_gate = weight_rows(L.w_gate, ffn.begin, ffn.end);
  s.w_up = weight_rows(L.w_up, ffn.begin, ffn.end);
  RECUR_ASSIGN_OR_RETURN(s.wo, row_parallel_shard(L.wo, {heads.begin * hd, heads.end * hd}, ranks));
  RECUR_ASSIGN_OR_RETURN(s.w_down, row_parallel_shard(L.w_down, ffn, ranks));
  return s;
}

Result<size_t> release_llama_row_parallel_sources(const LlamaModel& m) {
  std::vector<const Weight*> sources;
  for (const LayerWeights& L : m.layers) {
    sources.push_back(&L.wo);
    sources.push_back(&L.w_down);
  }
  return release_copied_sources(m.file().mapping(), sources);
}

// A rank's shard: head, KV-head, FFN and vocabulary ranges, its weights and its buffers.
struct LlamaSession::Rank {
  using Layer = LlamaLayerShard;
  int index = 0;
  Span heads, kv_heads, ffn, vocab;
  std::vector<Layer> layers;
  Weight output;
  std::vector<float> x, xb, partial, norm_w, q, k, v, att, attn_out, hb, hb2;
  std::vector<float> key_cache, value_cache;  // [layer][pos][local kv heads * head_dim]
};

LlamaSession::LlamaSession(const LlamaModel& model, ThreadPool& pool, int max_tokens)
    : model_(model), pool_(pool), max_tokens_(max_tokens) {}
LlamaSession::~LlamaSession() = default;
int LlamaSession::tp() const { return int(ranks_.size()); }

Result<std::unique_ptr<LlamaSession>> LlamaSession::create(const LlamaModel& model, ThreadPool& pool, int max_tokens,
                                                           int tp, ReduceDtype reduce) {
  const ModelConfig& c = model.config();
  if (tp < 1) return invalid_argument("engine.tp must be at least 1, got {}", tp);
  if (c.arch != Arch::kLlama || model.rope_freqs.data != nullptr || c.rope_freq_scale != 1.0f)
    return unsupported("the sequential llama session runs plain llama only (this is {}{})", arch_name(c.arch),
                       c.arch == Arch::kLlama ? " with RoPE scaling" : "");
  if (c.n_heads % tp != 0)
    return invalid_argument("engine.tp={} does not divide the {} attention heads", tp, c.n_heads);
  const int64_t block = gguf::block_layout(model.layers[0].w_down.type).elements;
  if ((c.ffn_dim / tp) % block != 0 || c.ffn_dim % tp != 0)
    return invalid_argument("engine.tp={}: FFN width {} does not split into whole {}-element blocks", tp, c.ffn_dim,
                            block);
  if (((c.n_heads / tp) * c.head_dim) % block != 0)
    return invalid_argument("engine.tp={}: a rank's {} heads of {} are not whole {}-element blocks", tp,
                            c.n_heads / tp, c.head_dim, block);
  std::unique_ptr<LlamaSession> s(new LlamaSession(model, pool, max_tokens));
  const int hd = c.head_dim, group = c.n_heads / c.n_kv_heads;
  for (int r = 0; r < tp; ++r) {
    auto rank = std::make_unique<Rank>();
    rank->index = r;
    rank->heads = rank_span(c.n_heads, tp, r);
    rank->kv_heads = {rank->heads.begin / group, (rank->heads.end - 1) / group + 1};
    rank->ffn = rank_span(c.ffn_dim, tp, r);
    rank->vocab = rank_span(c.vocab, tp, r);
    for (const LayerWeights& L : model.layers) {
      RECUR_ASSIGN_OR_RETURN(Rank::Layer shard, shard_llama_layer(L, rank->heads, rank->kv_heads, rank->ffn, hd, tp));
      rank->layers.push_back(std::move(shard));
    }
    rank->output = weight_rows(model.output, rank->vocab.begin, rank->vocab.end);
    const size_t q_local = size_t(rank->heads.size()) * hd, kv_local = size_t(rank->kv_heads.size()) * hd;
    rank->x.resize(size_t(c.dim));
    rank->xb.resize(size_t(c.dim));
    rank->partial.resize(size_t(c.dim));
    rank->norm_w.resize(size_t(c.dim));
    rank->q.resize(q_local);
    rank->k.resize(kv_local);
    rank->v.resize(kv_local);
    rank->att.resize(size_t(rank->heads.size()) * size_t(max_tokens));
    rank->attn_out.resize(q_local);
    rank->hb.resize(size_t(rank->ffn.size()));
    rank->hb2.resize(size_t(rank->ffn.size()));
    rank->key_cache.resize(size_t(c.n_layers) * size_t(max_tokens) * kv_local);
    rank->value_cache.resize(size_t(c.n_layers) * size_t(max_tokens) * kv_local);
    s->ranks_.push_back(std::move(rank));
  }
  s->logits_.resize(size_t(c.vocab));
  if (tp > 1) {
    RECUR_ASSIGN_OR_RETURN(s->runner_, RankRunner::create(tp, c.dim, reduce));
    RECUR_ASSIGN_OR_RETURN(s->released_source_bytes_, release_llama_row_parallel_sources(model));
  }
  return s;
}

void LlamaSession::all_reduce(Rank& r, int n) {
  if (ranks_.size() == 1) return;
  RECUR_ZONE("all_reduce");
  zone.arg("ranks", int64_t(ranks_.size()));
  zone.arg("floats", n);
  runner_->group().all_reduce_sum(r.index, r.partial.data(), r.partial.data(), n);
}

void LlamaSession::rank_step(Rank& r, TokenId token) {
  const ModelConfig& c = model_.config();
  const int dim = c.dim, hd = c.head_dim, group = c.n_heads / c.n_kv_heads;
  ThreadPool* intra = ranks_.size() == 1 ? &pool_ : nullptr;  // one rank: parallel inside each product
  const size_t kv_local = size_t(r.kv_heads.size()) * hd;
  model_.token_embedding.dequantize_row(token, r.x.data());
  for (int l = 0; l < c.n_layers; ++l) {
    RECUR_ZONE("layer");
    zone.arg("layer", l);
    zone.arg("rank", r.index);
    zone.arg("pos", pos_);
    const LayerWeights& L = model_.layers[size_t(l)];
    const Rank::Layer& S = r.layers[size_t(l)];
    rmsnorm(r.xb.data(), r.x.data(), L.attn_norm, dim, c.rms_eps, r.norm_w.data());
    matvec(S.wq, r.xb.data(), r.q.data(), intra);
    matvec(S.wk, r.xb.data(), r.k.data(), intra);
    matvec(S.wv, r.xb.data(), r.v.data(), intra);
    rope_interleaved(r.q.data(), int(r.heads.size()), hd, pos_, c.rope_theta);
    rope_interleaved(r.k.data(), int(r.kv_heads.size()), hd, pos_, c.rope_theta);
    const size_t layer_base = size_t(l) * size_t(max_tokens_) * kv_local;
    std::copy(r.k.begin(), r.k.end(), r.key_cache.begin() + long(layer_base + size_t(pos_) * kv_local));
    std::copy(r.v.begin(), r.v.end(), r.value_cache.begin() + long(layer_base + size_t(pos_) * kv_local));
    {
      RECUR_ZONE("attention");
      zone.arg("layer", l);
      zone.arg("heads", int64_t(r.heads.size()));
      zone.arg("tokens", pos_ + 1);
      attention_decode(r.q.data(), r.key_cache.data() + layer_base, r.value_cache.data() + layer_base,
                     int(r.heads.size()), int(r.kv_heads.size()), hd, pos_ + 1, r.attn_out.data(), r.att.data(), intra,
                     group, int(r.heads.begin), int(r.kv_heads.begin));
    }
    matvec(S.wo->view, r.attn_out.data(), r.partial.data(), intra);
    all_reduce(r, dim);
    for (int i = 0; i < dim; ++i) r.x[size_t(i)] += r.partial[size_t(i)];

    rmsnorm(r.xb.data(), r.x.data(), L.ffn_norm, dim, c.rms_eps, r.norm_w.data());
    matvec(S.w_gate, r.xb.data(), r.hb.data(), intra);
    matvec(S.w_up, r.xb.data(), r.hb2.data(), intra);
    swiglu(r.hb.data(), r.hb2.data(), int(r.ffn.size()));
    matvec(S.w_down->view, r.hb.data(), r.partial.data(), intra);
    all_reduce(r, dim);
    for (int i = 0; i < dim; ++i) r.x[size_t(i)] += r.partial[size_t(i)];
    if (observer_ && r.index == 0) observer_(l, r.x);
  }
  rmsnorm(r.xb.data(), r.x.data(), model_.output_norm, dim, c.rms_eps, r.norm_w.data());
  // Vocabulary-parallel LM head: this rank's slice of the shared logits (the all-gather).
  matvec(r.output, r.xb.data(), logits_.data() + r.vocab.begin, intra);
}

Result<std::span<const float>> LlamaSession::step(TokenId token) {
  const ModelConfig& c = model_.config();
  if (token < 0 || token >= c.vocab) return invalid_argument("token {} outside the vocabulary of {}", token, c.vocab);
  if (pos_ >= max_tokens_) return invalid_argument("sequence is full ({} tokens)", max_tokens_);
  RECUR_ZONE("step");
  zone.arg("pos", pos_);
  zone.arg("tp", int64_t(ranks_.size()));
  if (ranks_.size() == 1) rank_step(*ranks_[0], token);
  else
    runner_->run([&](int r) { rank_step(*ranks_[size_t(r)], token); });
  ++pos_;
  return std::span<const float>(logits_);
}

}  // namespace recur
