#include "engine/forward.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "engine/blocks/block.h"
#include "engine/ggml_matmul.h"
#include "trace/trace.h"

namespace recur {

Forward::Forward(const TransformerModel& m, ThreadPool& pool, const BatchOptions& batch, const EngineOptions& options)
    : m_(m), pool_(pool), batch_(batch), options_(options), who_(fmt::format("{} batch", arch_name(m.config().arch))) {}

Forward::~Forward() = default;

Result<std::unique_ptr<Forward>> Forward::create(const TransformerModel& m, ThreadPool& pool,
                                                 const BatchOptions& b, const EngineOptions& o) {
  const ModelConfig& c = m.config();
  const std::string who = fmt::format("{} batch", arch_name(c.arch));
  if (b.max_sequences < 1 || b.max_tokens < 1 || b.max_batch_tokens < 1)
    return invalid_argument("{}: max_sequences {}, max_tokens {}, max_batch_tokens {}: each must be >= 1", who,
                            b.max_sequences, b.max_tokens, b.max_batch_tokens);
  if (b.max_tokens > c.context)
    return invalid_argument("{}: max_tokens {} exceeds the context of {}", who, b.max_tokens, c.context);
  if (o.tp < 1) return invalid_argument("engine.tp must be at least 1, got {}", o.tp);
  int attention_layers = 0;
  for (int l = 0; l < c.n_layers; ++l) attention_layers += c.is_kda_layer(l) ? 0 : 1;
  if (int(o.kv_dtypes.size()) != attention_layers)
    return invalid_argument("{}: {} KV dtypes for {} attention layers", who, o.kv_dtypes.size(), attention_layers);
  const LayerWeights& first = m.layers[0];
  const Weight& down = first.exp_down.empty() ? first.w_down : first.exp_down[0];
  RECUR_RETURN_IF_ERROR(check_tp_split(c, o.tp, gguf::block_layout(down.type).elements, o.layer_split));
  const int ep = o.ep.ep, ranks = std::max(o.tp, ep);
  if (ep > 1 && c.n_experts == 0) return invalid_argument("engine.ep={}: the model has no MoE experts", ep);
  if (ep > 1 && c.n_experts % ep != 0)
    return invalid_argument("engine.ep={} does not divide the {} experts (each rank holds whole experts)", ep,
                            c.n_experts);
  if (o.tp > 1 && ep > 1 && o.tp != ep)
    return invalid_argument("engine.tp={} and engine.ep={}: with both above 1 they must be equal (one group of ranks)",
                            o.tp, ep);
  if (o.layer_split && o.tp > 1 && o.collectives == CollectivesBackend::kMpi && attention_layers < o.tp)
    return invalid_argument("engine.layer_split=on with engine.collectives=mpi: {} attention layers for engine.tp={} "
                            "ranks; every process must own one (it checks KV admission on its own pages)",
                            attention_layers, o.tp);
  std::unique_ptr<Forward> f(new Forward(m, pool, b, o));
  f->slots_.resize(size_t(b.max_sequences));
  for (int l = 0, a = 0; l < c.n_layers; ++l) f->attention_index_.push_back(c.is_kda_layer(l) ? -1 : a++);
  f->group_ranks_ = ranks;
  int first_rank = 0, end_rank = ranks;  // the ranks this process runs
  if (o.collectives == CollectivesBackend::kMpi) {
    RECUR_ASSIGN_OR_RETURN(f->process_comm_, make_process_collectives(ranks, o.reduce));
    first_rank = f->process_comm_->process_rank();
    end_rank = first_rank + 1;
  }
  for (int index = first_rank; index < end_rank; ++index) RECUR_RETURN_IF_ERROR(f->add_rank(index));
  if (ranks > 1 && !f->process_comm_) {
    RECUR_ASSIGN_OR_RETURN(f->runner_, RankRunner::create(ranks, int64_t(b.max_batch_tokens) * c.dim, o.reduce));
  }
  // Every local rank holds its copies now: drop the file pages they were copied from, so TP > 1
  // does not keep both (the ranks copy the same sources; under MPI this process's rank only).
  RECUR_ASSIGN_OR_RETURN(f->released_source_bytes_,
                         release_copied_sources(m.file().mapping(), f->ranks_[0]->w.copied_sources));
  return f;
}

Collectives* Forward::comm() {
  if (process_comm_) return process_comm_.get();
  return runner_ ? &runner_->group() : nullptr;
}

Result<std::span<const float>> Forward::forward(std::span<const BatchToken> tokens) {
  RECUR_ASSIGN_OR_RETURN(BatchPlan p, plan(tokens));
  if (p.rows() == 0) return std::span<const float>();
  RECUR_ZONE("forward");
  zone.arg("rows", p.rows());
  zone.arg("sequences", int64_t(p.runs.size()));
  zone.arg("tp", int64_t(options_.tp));
  zone.arg("ep", int64_t(options_.ep.ep));
  const size_t vocab = size_t(m_.config().vocab);
  if (logits_.size() < p.want.size() * vocab) logits_.resize(p.want.size() * vocab);
  if (ranks_.size() == 1) rank_forward(*ranks_[0], p);
  else runner_->run([&](int r) { rank_forward(*ranks_[size_t(r)], p); });
  for (const BatchPlan::Run& run : p.runs) slots_[size_t(run.seq)].position += int(run.count);
  for (auto& r : ranks_) {
    Status s = std::exchange(r->status, ok_status());
    RECUR_RETURN_IF_ERROR(s);
  }
  return std::span<const float>(logits_.data(), p.want.size() * vocab);
}

// The row-parallel sum of the ranks' partials (tp > 1), then the tap of its result.
void Forward::all_reduce(const Step& s, int l, Op op) {
  const int64_t n = s.rows() * m_.config().dim;
  if (options_.tp > 1) {
    RECUR_ZONE("all_reduce");
    zone.arg("ranks", int64_t(group_ranks_));
    zone.arg("floats", n);
    s.comm->all_reduce_sum(s.r.w.index, s.r.partial.data(), s.r.partial.data(), n);
  }
  s.tap(op, l, s.r.partial.data(), n);
}

// One rank's forward: the per-layer step, as llama2.c reads.
void Forward::rank_forward(ForwardRank& r, const BatchPlan& p) {
  const ModelConfig& c = m_.config();
  const int64_t M = p.rows(), dim = c.dim;
  const bool one_rank = ranks_.size() == 1;
  const OpTapper tap(op_tap_ != nullptr && M == 1 ? op_tap_ : nullptr, r.w.index, options_.tp == 1, c.n_layers);
  const Step s{.m = m_, .o = options_, .p = p, .r = r, .intra = one_rank ? &pool_ : nullptr, .comm = comm(),
               .ranks = group_ranks_, .per_process = process_comm_ != nullptr, .logits = logits_.data(), .tap = tap};
  embed_rows(s);
  for (int l = 0; l < c.n_layers; ++l) {
    RECUR_ZONE("layer");
    zone.arg("layer", l);
    zone.arg("rank", r.w.index);
    zone.arg("rows", M);
    const LayerWeights& L = m_.layers[size_t(l)];
    zone.arg("kind", L.kda ? "kda" : L.mla ? "mla" : "attention");
    // Token mixer: x += mixer(RMSNorm(x)).
    norm_rows(s, L.attn_norm);
    tap(Op::kAttnNorm, l, r.h.data(), dim);
    if (L.kda) kda_mixer(s, l);
    else if (L.mla) mla_mixer(s, l);
    else attention_mixer(s, l);
    all_reduce(s, l, L.kda ? Op::kKdaAllReduce : Op::kAttnAllReduce);
    if (L.post_attn_norm.data != nullptr) norm_partial_rows(s, L.post_attn_norm);  // gemma2's sandwich
    // FFN: x += ffn(RMSNorm(x)), the mixer's residual add fused with the norm.
    add_partial_norm_rows(s, L.ffn_norm);
    tap(L.kda ? Op::kKdaMixResidual : Op::kAttnMixResidual, l, r.x.data(), dim);
    tap(Op::kFfnNorm, l, r.h.data(), dim);
    // ggml_arithmetic: llama.cpp runs the last layer's FFN on the rows that want logits only, so
    // its matmuls choose tinyBLAS or vec_dot by their count (ggml_matmul.h).
    std::optional<GgmlTileTokensScope> outputs_only;
    if (options_.ggml && l == c.n_layers - 1) outputs_only.emplace(std::max<int64_t>(1, int64_t(p.want.size())));
    if (c.is_dense_ffn_layer(l)) {
      dense_ffn(s, l);
      all_reduce(s, l, Op::kFfnAllReduce);
    } else {
      moe_ffn(s, l);
      if (options_.ep.ep > 1) tap(Op::kMoeCombine, l, r.partial.data(), dim);  // gathered whole: no reduce
      else all_reduce(s, l, Op::kMoeAllReduce);
    }
    if (L.post_ffn_norm.data != nullptr) norm_partial_rows(s, L.post_ffn_norm);
    add_partial_rows(s);
    tap(Op::kResidual, l, r.x.data(), dim);
    if (observer_ && M == 1 && r.w.index == 0) (*observer_)(l, std::span<const float>(r.x.data(), size_t(dim)));
    if (layer_hook_ && r.w.index == 0) layer_hook_(l);
  }
  lm_head(s);
}

}  // namespace recur
