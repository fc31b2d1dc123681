#include "engine/llama_batch.h"

#include <algorithm>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "core/thread_pool.h"
#include "engine/layers.h"
#include "engine/sequence_state.h"
#include "kernels/attention/attention.h"
#include "kernels/layer/layer.h"
#include "trace/trace.h"

namespace recur {

namespace llama_paged = kernels::attention;

Result<LlamaBatchOptions> llama_batch_options(const Config& knobs, const ModelConfig& c, const BatchOptions& batch) {
  LlamaBatchOptions o;
  o.batch = batch;
  RECUR_ASSIGN_OR_RETURN(std::string numerics, knobs.get("engine.numerics"));
  if (numerics != "native") return unsupported("engine.numerics={}: llama runs native only", numerics);
  RECUR_ASSIGN_OR_RETURN(int64_t tp, knobs.get_int("engine.tp"));
  o.tp = int(tp);
  RECUR_ASSIGN_OR_RETURN(CollectivesBackend collectives, collectives_backend_from_config(knobs));
  if (collectives != CollectivesBackend::kThreads)
    return unsupported("engine.collectives=mpi: llama runs its ranks as threads only (the hybrid model runs under mpi)");
  RECUR_ASSIGN_OR_RETURN(int64_t ep, knobs.get_int("engine.ep"));
  if (ep > 1) return invalid_argument("engine.ep={}: llama has no MoE experts", ep);
  RECUR_ASSIGN_OR_RETURN(std::string layer_split, knobs.get("engine.layer_split"));
  if (layer_split == "on" && tp > 1)
    return unsupported("engine.layer_split=on with engine.tp={}: llama splits attention by heads only (layer split "
                       "is built for the hybrid model)",
                       tp);
  RECUR_ASSIGN_OR_RETURN(o.reduce, reduce_dtype_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(o.act, gemm::activations_from_config(knobs));
  for (int l = 0; l < c.n_layers; ++l) {
    RECUR_ASSIGN_OR_RETURN(std::string name, knobs.get(fmt::format("engine.kv_dtype.layer[{}]", l)));
    RECUR_ASSIGN_OR_RETURN(llama_paged::KvDType t, llama_paged::parse_kv_dtype(name));
    o.kv_dtypes.push_back(t);
  }
  return o;
}

// A rank's shard: head, KV-head, FFN and vocabulary ranges, its weights, KV cache and buffers.
struct LlamaBatch::Rank {
  using Layer = LlamaLayerShard;
  int index = 0;
  Span heads, kv_heads, ffn, vocab;
  std::vector<Layer> layers;
  Weight output;
  std::optional<llama_paged::PagedKvCache> kv;
  std::vector<int> kv_seq;  // slot -> the cache's sequence id
  // Rows of one forward: [max_batch_tokens, width].
  std::vector<float> x, h, partial, q, k, v, o, ff_a, ff_b, logits, norm_w;
  std::vector<float> rope;  // [rows, head_dim]: each row's RoPE cos / sin, shared by every layer
  Status status;
};

LlamaBatch::LlamaBatch(const LlamaModel& m, ThreadPool& pool, const LlamaBatchOptions& options)
    : m_(m), pool_(pool), options_(options) {}
LlamaBatch::~LlamaBatch() = default;

Result<std::unique_ptr<LlamaBatch>> LlamaBatch::create(const LlamaModel& m, ThreadPool& pool,
                                                       const LlamaBatchOptions& o) {
  const ModelConfig& c = m.config();
  const BatchOptions& b = o.batch;
  const int tp = o.tp;
  if (b.max_sequences < 1 || b.max_tokens < 1 || b.max_batch_tokens < 1)
    return invalid_argument("llama batch: max_sequences {}, max_tokens {}, max_batch_tokens {}: each must be >= 1",
                            b.max_sequences, b.max_tokens, b.max_batch_tokens);
  if (b.max_tokens > c.context)
    return invalid_argument("llama batch: max_tokens {} exceeds the context of {}", b.max_tokens, c.context);
  if (int(o.kv_dtypes.size()) != c.n_layers)
    return invalid_argument("llama batch: {} KV dtypes for {} layers", o.kv_dtypes.size(), c.n_layers);
  if (tp < 1) return invalid_argument("engine.tp must be at least 1, got {}", tp);
  const int group = c.n_heads / c.n_kv_heads;
  // A rank's heads must share whole KV heads: whole groups, or a part of one group.
  const int per_rank = c.n_heads / tp;
  if (c.n_heads % tp != 0 || (per_rank % group != 0 && group % per_rank != 0))
    return invalid_argument("engine.tp={}: the {} attention heads do not split into whole groups of {} per KV head",
                            tp, c.n_heads, group);
  const int64_t block = gguf::block_layout(m.layers[0].w_down.type).elements;
  if (c.ffn_dim % tp != 0 || (c.ffn_dim / tp) % block != 0 || ((c.n_heads / tp) * c.head_dim) % block != 0)
    return invalid_argument("engine.tp={}: FFN width {} or a rank's heads do not split into whole {}-element blocks",
                            tp, c.ffn_dim, block);
  std::unique_ptr<LlamaBatch> batch(new LlamaBatch(m, pool, o));
  batch->slots_.resize(size_t(b.max_sequences));
  const int64_t M = b.max_batch_tokens, hd = c.head_dim;
  const int64_t kv_pages = b.max_sequences * batch_kv_pages_for(b.max_tokens);
  for (int index = 0; index < tp; ++index) {
    auto r = std::make_unique<Rank>();
    r->index = index;
    r->heads = rank_span(c.n_heads, tp, index);
    r->kv_heads = {r->heads.begin / group, (r->heads.end - 1) / group + 1};
    r->ffn = rank_span(c.ffn_dim, tp, index);
    r->vocab = rank_span(c.vocab, tp, index);
    for (const LlamaLayerWeights& L : m.layers) {
      RECUR_ASSIGN_OR_RETURN(Rank::Layer s, shard_llama_layer(L, r->heads, r->kv_heads, r->ffn, int(hd), tp));
      r->layers.push_back(std::move(s));
    }
    r->output = weight_rows(m.output, r->vocab.begin, r->vocab.end);
    llama_paged::KvCacheConfig kc{.kv_heads = int(r->kv_heads.size()), .head_dim = int(hd),
                                  .page_size = kBatchKvPageSize, .num_pages = kv_pages, .layer_dtypes = o.kv_dtypes};
    RECUR_ASSIGN_OR_RETURN(llama_paged::PagedKvCache cache, llama_paged::PagedKvCache::create(kc));
    r->kv.emplace(std::move(cache));
    r->kv_seq.assign(size_t(b.max_sequences), -1);
    const int64_t q_local = r->heads.size() * hd, kv_local = r->kv_heads.size() * hd;
    for (auto* buf : {&r->x, &r->h, &r->partial}) buf->resize(size_t(M * c.dim));
    r->q.resize(size_t(M * q_local));
    r->o.resize(size_t(M * q_local));
    r->k.resize(size_t(M * kv_local));
    r->v.resize(size_t(M * kv_local));
    r->ff_a.resize(size_t(M * r->ffn.size()));
    r->ff_b.resize(size_t(M * r->ffn.size()));
    r->norm_w.resize(size_t(c.dim));
    r->rope.resize(size_t(M * hd));
    batch->ranks_.push_back(std::move(r));
  }
  if (tp > 1) {
    RECUR_ASSIGN_OR_RETURN(batch->runner_, RankRunner::create(tp, M * c.dim, o.reduce));
    RECUR_ASSIGN_OR_RETURN(batch->released_source_bytes_, release_llama_row_parallel_sources(m));
  }
  return batch;
}

Result<SeqId> LlamaBatch::add_sequence() {
  RECUR_ASSIGN_OR_RETURN(size_t slot, batch_free_slot("llama batch", slots_));
  for (auto& r : ranks_) {
    RECUR_ASSIGN_OR_RETURN(r->kv_seq[slot], r->kv->add_sequence());
  }
  slots_[slot] = {.live = true, .position = 0};
  return SeqId(slot);
}

Status LlamaBatch::free_sequence(SeqId seq) {
  if (position(seq) < 0)
    return not_found("llama batch: free_sequence: no live sequence {}", seq);
  for (auto& r : ranks_) {
    RECUR_RETURN_IF_ERROR(r->kv->free_sequence(r->kv_seq[size_t(seq)]));
    r->kv_seq[size_t(seq)] = -1;
  }
  slots_[size_t(seq)] = BatchSlot{};
  return ok_status();
}

int LlamaBatch::position(SeqId seq) const { return batch_slot_position(slots_, seq); }

KvUsage LlamaBatch::kv_usage() const {
  KvUsage u;
  for (const auto& r : ranks_) {
    const llama_paged::KvCacheConfig& c = r->kv->config();
    if (r->index == 0) {
      u.pages_total = c.num_pages;
      u.pages_used = c.num_pages - r->kv->free_pages();
    }
    for (int l = 0; l < r->kv->layers(); ++l) u.bytes_total += int64_t(r->kv->token_bytes(l)) * c.page_size * c.num_pages;
  }
  return u;
}

Status LlamaBatch::state_parts(SeqId seq, SequenceStateParts& out) {
  if (position(seq) < 0) return not_found("llama batch: state_parts: no live sequence {}", seq);
  if (ranks_.size() != 1)
    return unsupported("llama batch: sequence state export/import needs engine.tp=1 (got {})", ranks_.size());
  Rank& r = *ranks_[0];
  out = SequenceStateParts{.kv = &*r.kv, .kv_seq = r.kv_seq[size_t(seq)], .kv_layer = {}, .kda = {},
                           .position = &slots_[size_t(seq)].position};
  for (int l = 0; l < m_.config().n_layers; ++l) out.kv_layer.push_back(l);
  out.kda.assign(size_t(m_.config().n_layers), nullptr);
  return ok_status();
}

Result<LlamaBatch::Plan> LlamaBatch::plan(std::span<const BatchToken> tokens) const {
  return plan_batch("llama batch", tokens, slots_, options_.batch, m_.config().vocab, &*ranks_[0]->kv);
}

Result<std::span<const float>> LlamaBatch::forward(std::span<const BatchToken> tokens) {
  RECUR_ASSIGN_OR_RETURN(Plan p, plan(tokens));
  if (p.rows() == 0) return std::span<const float>();
  RECUR_ZONE("forward");
  zone.arg("rows", p.rows());
  zone.arg("sequences", int64_t(p.runs.size()));
  zone.arg("tp", int64_t(ranks_.size()));
  const size_t vocab = size_t(m_.config().vocab);
  if (logits_.size() < p.want.size() * vocab) logits_.resize(p.want.size() * vocab);
  if (ranks_.size() == 1) rank_forward(*ranks_[0], p);
  else runner_->run([&](int r) { rank_forward(*ranks_[size_t(r)], p); });
  for (const Plan::Run& run : p.runs) slots_[size_t(run.seq)].position += int(run.count);
  for (auto& r : ranks_) {
    Status s = std::exchange(r->status, ok_status());
    RECUR_RETURN_IF_ERROR(s);
  }
  return std::span<const float>(logits_.data(), p.want.size() * vocab);
}

void LlamaBatch::all_reduce(Rank& r, int64_t rows) {
  if (ranks_.size() == 1) return;
  const int64_t n = rows * m_.config().dim;
  RECUR_ZONE("all_reduce");
  zone.arg("ranks", int64_t(ranks_.size()));
  zone.arg("floats", n);
  runner_->group().all_reduce_sum(r.index, r.partial.data(), r.partial.data(), n);
}

namespace {

// fn(i0, i1) over rows [0, rows) in claimed chunks on the pool (null: on the caller). For the
// row-wise passes of a batched forward (norms, residual adds, SwiGLU, RoPE): each row is
// computed whole by one thread, so the bits do not depend on the pool.
template <class Fn>
void llama_batch_for_rows(ThreadPool* pool, int64_t rows, const Fn& fn) {
  if (pool == nullptr || pool->size() == 1 || rows < 2) {
    fn(int64_t{0}, rows);
    return;
  }
  const int64_t per_chunk = std::max<int64_t>(1, rows / (4 * int64_t(pool->size())));
  pool->parallel_claim((rows + per_chunk - 1) / per_chunk,
                       [&](int64_t c, int) { fn(c * per_chunk, std::min(rows, (c + 1) * per_chunk)); });
}

}  // namespace

void LlamaBatch::rank_forward(Rank& r, const Plan& p) {
  const ModelConfig& c = m_.config();
  const int64_t M = p.rows(), dim = c.dim;
  ThreadPool* intra = ranks_.size() == 1 ? &pool_ : nullptr;  // one rank: parallel inside each product
  auto norm_rows = [&](const Weight& w) {
    llama_batch_for_rows(intra, M, [&](int64_t i0, int64_t i1) {
      thread_local std::vector<float> norm_w;
      norm_w.resize(size_t(dim));
      for (int64_t i = i0; i < i1; ++i)
        rmsnorm(r.h.data() + i * dim, r.x.data() + i * dim, w, c.dim, c.rms_eps, norm_w.data());
    });
  };
  auto add_partial = [&] {
    llama_batch_for_rows(intra, M, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0 * dim; i < i1 * dim; ++i) r.x[size_t(i)] += r.partial[size_t(i)];
    });
  };
  const int64_t ffn = r.ffn.size();
  // SwiGLU in place through the vector layer kernel (registered and checked against float64;
  // each chunk is read before it is written): std::exp per element cost ~3 ms a layer at 128
  // rows. Its bits differ from layers.h swiglu's in the last place.
  auto swiglu_rows = [&] {
    llama_batch_for_rows(intra, M, [&](int64_t i0, int64_t i1) {
      float* gate = r.ff_a.data() + i0 * ffn;
      kernels::swiglu(gate, r.ff_b.data() + i0 * ffn, gate, (i1 - i0) * ffn);
    });
  };
  for (int64_t i = 0; i < M; ++i)
    rope_cos_sin(int(c.head_dim), p.positions[size_t(i)], c.rope_theta, r.rope.data() + i * c.head_dim);
  batch_embed_rows(p, m_.token_embedding, int(dim), r.x.data());
  for (int l = 0; l < c.n_layers; ++l) {
    RECUR_ZONE("layer");
    zone.arg("layer", l);
    zone.arg("rank", r.index);
    zone.arg("rows", M);
    const LlamaLayerWeights& L = m_.layers[size_t(l)];
    const Rank::Layer& S = r.layers[size_t(l)];
    norm_rows(L.attn_norm);
    attention(r, l, p, intra);
    matmul(S.wo->view, r.o.data(), M, r.partial.data(), intra, options_.act);
    all_reduce(r, M);
    add_partial();
    norm_rows(L.ffn_norm);
    matmul(S.w_gate, r.h.data(), M, r.ff_a.data(), intra, options_.act);
    matmul(S.w_up, r.h.data(), M, r.ff_b.data(), intra, options_.act);
    swiglu_rows();
    matmul(S.w_down->view, r.ff_a.data(), M, r.partial.data(), intra, options_.act);
    all_reduce(r, M);
    add_partial();
    if (observer_ && M == 1 && r.index == 0) (*observer_)(l, std::span<const float>(r.x.data(), size_t(dim)));
    if (layer_hook_ && r.index == 0) layer_hook_(l);
  }
  // The LM head for the rows that want logits only, in the caller's order.
  const int64_t n = int64_t(p.want.size());
  if (n == 0) return;
  for (int64_t j = 0; j < n; ++j)
    rmsnorm(r.h.data() + j * dim, r.x.data() + p.want[size_t(j)] * dim, m_.output_norm, c.dim, c.rms_eps,
            r.norm_w.data());
  // Vocabulary-parallel LM head: this rank's slice of the shared logits (the all-gather).
  const Span vs = r.vocab;
  if (ranks_.size() == 1) {
    matmul(r.output, r.h.data(), n, logits_.data(), intra, options_.act);
    return;
  }
  r.logits.resize(size_t(n * vs.size()));
  matmul(r.output, r.h.data(), n, r.logits.data(), intra, options_.act);
  for (int64_t j = 0; j < n; ++j)
    std::copy_n(r.logits.data() + j * vs.size(), vs.size(), logits_.data() + j * c.vocab + vs.begin);
}

void LlamaBatch::attention(Rank& r, int l, const Plan& p, ThreadPool* intra) {
  RECUR_ZONE("attention");
  zone.arg("layer", l);
  zone.arg("rows", p.rows());
  const ModelConfig& c = m_.config();
  const Rank::Layer& S = r.layers[size_t(l)];
  const int64_t M = p.rows(), hd = c.head_dim;
  const int heads = int(r.heads.size()), kv_heads = int(r.kv_heads.size());
  const int64_t q_local = heads * hd, kv_local = kv_heads * hd;
  matmul(S.wq, r.h.data(), M, r.q.data(), intra, options_.act);
  matmul(S.wk, r.h.data(), M, r.k.data(), intra, options_.act);
  matmul(S.wv, r.h.data(), M, r.v.data(), intra, options_.act);
  llama_batch_for_rows(intra, M, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      rope_rotate(r.q.data() + i * q_local, heads, int(hd), r.rope.data() + i * hd);
      rope_rotate(r.k.data() + i * kv_local, kv_heads, int(hd), r.rope.data() + i * hd);
    }
  });
  std::vector<int> seqs;
  std::vector<int64_t> counts;
  for (const Plan::Run& run : p.runs) {
    seqs.push_back(r.kv_seq[size_t(run.seq)]);
    counts.push_back(run.count);
  }
  Status s;
  if (p.all_single) {
    // Batched decode: append each sequence's token, then one paged decode over all of them.
    for (size_t i = 0; i < seqs.size() && s; ++i)
      s = r.kv->append(seqs[i], l, std::span<const float>(r.k.data() + int64_t(i) * kv_local, size_t(kv_local)),
                       std::span<const float>(r.v.data() + int64_t(i) * kv_local, size_t(kv_local)));
    if (s) s = llama_paged::decode(*r.kv, l, seqs, r.q.data(), heads, r.o.data(), {}, intra);
  } else {
    s = llama_paged::prefill(*r.kv, l, seqs, counts, r.q.data(), r.k.data(), r.v.data(), heads, r.o.data(), {}, intra);
  }
  if (!s && r.status) r.status = std::move(s);
}

namespace {

class LlamaBatchSession final : public Session {
 public:
  LlamaBatchSession(std::unique_ptr<LlamaBatch> batch, SeqId seq, int vocab)
      : batch_(std::move(batch)), seq_(seq), vocab_(vocab) {}

  int position() const override { return batch_->position(seq_); }

  Result<std::span<const float>> step(TokenId token) override {
    const BatchToken row{.seq = seq_, .token = token, .want_logits = true};
    RECUR_ZONE("step");  // a session's step, as traces and gate specs name it
    zone.arg("pos", position());
    batch_->set_layer_observer(observer_ ? &observer_ : nullptr);
    return batch_->forward(std::span<const BatchToken>(&row, 1));
  }

  Result<std::span<const float>> prefill(std::span<const TokenId> tokens) override {
    if (tokens.empty()) return invalid_argument("prefill: no tokens");
    if (observer_) return Session::prefill(tokens);
    batch_->set_layer_observer(nullptr);
    RECUR_ZONE("step");  // a step of several tokens: every layer zone stays inside a step zone
    zone.arg("pos", position());
    zone.arg("tokens", int64_t(tokens.size()));
    return prefill_sequence(*batch_, seq_, batch_->options(), vocab_, tokens);
  }

 private:
  std::unique_ptr<LlamaBatch> batch_;
  SeqId seq_;
  int vocab_;
};

}  // namespace

Result<std::unique_ptr<Session>> new_llama_batch_session(const LlamaModel& m, ThreadPool& pool, int max_tokens,
                                                         const Config& knobs) {
  const ModelConfig& c = m.config();
  if (max_tokens <= 0 || max_tokens > c.context)
    return invalid_argument("session of {} tokens (the context is {})", max_tokens, c.context);
  const BatchOptions one{.max_sequences = 1, .max_tokens = max_tokens, .max_batch_tokens = std::min(max_tokens, 256)};
  RECUR_ASSIGN_OR_RETURN(LlamaBatchOptions options, llama_batch_options(knobs, c, one));
  RECUR_ASSIGN_OR_RETURN(auto batch, LlamaBatch::create(m, pool, options));
  RECUR_ASSIGN_OR_RETURN(SeqId seq, batch->add_sequence());
  return std::unique_ptr<Session>(std::make_unique<LlamaBatchSession>(std::move(batch), seq, c.vocab));
}

}  // namespace recur
