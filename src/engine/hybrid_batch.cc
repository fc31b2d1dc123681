#include "engine/hybrid_batch.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include <fmt/format.h>

#include "core/thread_pool.h"
#include "engine/hybrid_shard.h"
#include "engine/layers.h"
#include "engine/sequence_state.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/kv_cache.h"
#include "trace/trace.h"

namespace recur {

RECUR_KNOB(engine_kda_decode_variant,
           {.name = "engine.kda.decode_variant", .type = KnobType::kEnum,
            .choices = {"vtile", "vtile_recip", "hoisted", "hoisted_recip"}, .default_value = "hoisted",
            .components = {"kernel:kda_decode"},
            .acts = KnobActs::kEngine,
            .help = "KDA decode work split: prologue per V-tile (vtile, vtile_recip) or once per head (hoisted, "
                    "hoisted_recip); _recip: rsqrt/rcp + Newton step instead of divisions"});
RECUR_KNOB(engine_kda_prefill_variant,
           {.name = "engine.kda.prefill_variant", .type = KnobType::kEnum,
            .choices = {"recurrent", "chunked64", "chunked16"}, .default_value = "recurrent",
            .components = {"kernel:kda_prefill"},
            .acts = KnobActs::kEngine,
            .help = "KDA over a prompt run of several tokens: token by token (recurrent) or the WY/UT chunked form "
                    "with chunks of 64 or 16 tokens"});
RECUR_KNOB(engine_kda_replay,
           {.name = "engine.kda.replay", .type = KnobType::kEnum, .choices = {"off", "on"}, .default_value = "off",
            .components = {"kernel:kda_decode"},
            .acts = KnobActs::kEngine,
            .help = "on: each sequence's KDA state is a ReplaySSM checkpoint plus the last engine.kda.replay_window "
                    "steps, decode steps run kda::replay_step (the state is written once per window)"});
RECUR_KNOB(engine_kda_replay_window,
           {.name = "engine.kda.replay_window", .type = KnobType::kInt, .min = 1, .max = 1024, .default_value = "16",
            .components = {"kernel:kda_decode"},
            .acts = KnobActs::kEngine,
            .help = "ReplaySSM window L: decode steps buffered before they are folded into the checkpoint"});
RECUR_KNOB(engine_kv_dtype_layer,
           {.name = "engine.kv_dtype.layer[]", .type = KnobType::kEnum,
            .choices = {"f32", "bf16", "fp8_e4m3", "int8"}, .default_value = "f32",
            // The attention core reads the cache: its op tap carries the storage's rounding.
            .components = {"engine:kv_cache", "engine:attention"},
            .acts = KnobActs::kEngine,
            .help = "element type of layer N's paged KV cache (kernels/attention kv_cache.h); fp8_e4m3 with scale 1 "
                    "per KV head; layers without attention hold no KV and ignore it"});
RECUR_KNOB(engine_hybrid_kv_pages,
           {.name = "engine.hybrid.kv_pages", .type = KnobType::kInt, .min = 0, .max = 1 << 30, .default_value = "0",
            .components = {"engine:kv_cache"},
            .acts = KnobActs::kEngine,
            .help = "pages of 16 tokens in a hybrid batch's attention KV pool; 0: enough for every sequence at "
                    "max_tokens"});

RECUR_KNOB(engine_layer_split,
           {.name = "engine.layer_split", .type = KnobType::kEnum, .choices = {"off", "on"}, .default_value = "off",
            .components = {"engine:kv_cache"},
            .acts = KnobActs::kEngine,
            .help = "with engine.tp > 1: each attention layer whole on one rank (round robin), holding that layer's "
                    "KV cache alone, instead of its heads split and KV heads replicated across ranks; no-op at tp = 1"});

namespace paged_attn = kernels::attention;

namespace {

float hybrid_sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

}  // namespace

Result<HybridBatchOptions> hybrid_batch_options(const Config& knobs, const ModelConfig& c, const BatchOptions& batch) {
  HybridBatchOptions o;
  o.batch = batch;
  RECUR_ASSIGN_OR_RETURN(int64_t tp, knobs.get_int("engine.tp"));
  o.tp = int(tp);
  RECUR_ASSIGN_OR_RETURN(o.ep, moe::ep_options_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(o.collectives, collectives_backend_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(o.reduce, reduce_dtype_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(o.precision, gemm::precision_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(o.act, gemm::activations_from_config(knobs));
  RECUR_ASSIGN_OR_RETURN(std::string decode, knobs.get("engine.kda.decode_variant"));
  auto dv = kda::parse_decode_variant(decode);
  if (!dv) return invalid_argument("engine.kda.decode_variant '{}' is not a KDA decode variant", decode);
  o.kda.decode = *dv;
  RECUR_ASSIGN_OR_RETURN(std::string prefill, knobs.get("engine.kda.prefill_variant"));
  auto pv = kda::parse_prefill_variant(prefill);
  if (!pv) return invalid_argument("engine.kda.prefill_variant '{}' is not a KDA prefill variant", prefill);
  o.kda.prefill = *pv;
  RECUR_ASSIGN_OR_RETURN(std::string replay, knobs.get("engine.kda.replay"));
  o.kda.replay = replay == "on";
  RECUR_ASSIGN_OR_RETURN(int64_t window, knobs.get_int("engine.kda.replay_window"));
  o.kda.replay_window = int(window);
  RECUR_ASSIGN_OR_RETURN(o.kv_pages, knobs.get_int("engine.hybrid.kv_pages"));
  RECUR_ASSIGN_OR_RETURN(std::string layer_split, knobs.get("engine.layer_split"));
  o.layer_split = layer_split == "on";
  for (int l = 0; l < c.n_layers; ++l) {
    if (c.is_kda_layer(l)) continue;
    RECUR_ASSIGN_OR_RETURN(std::string name, knobs.get(fmt::format("engine.kv_dtype.layer[{}]", l)));
    RECUR_ASSIGN_OR_RETURN(paged_attn::KvDType t, paged_attn::parse_kv_dtype(name));
    o.kv_dtypes.push_back(t);
  }
  return o;
}

struct HybridBatch::Rank {
  hybrid::RankWeights w;
  std::optional<paged_attn::PagedKvCache> kv;                     // attention layers, this rank's KV heads
  std::vector<int> kv_layer;  // layer -> its layer in `kv` (-1: KDA, or another rank's under layer split)
  // [layer][slot], made when the slot is first used; empty for attention layers.
  std::vector<std::vector<std::optional<hybrid::KdaSequenceState>>> kda;
  std::vector<int> kv_seq;                                  // slot -> the cache's sequence id
  // Rows of one forward: [max_batch_tokens, width].
  std::vector<float> x, h, partial, q, k, v, g, b, o, gate, ff_a, ff_b, ff_out, xg, router, logits;
  std::vector<float> norm_w, scratch;
  kda::Workspace ws;
  moe::EpWorkspace ep;
  Status status;
};

HybridBatch::HybridBatch(const HybridModel& m, ThreadPool& pool, const HybridBatchOptions& options)
    : m_(m), pool_(pool), options_(options) {}

HybridBatch::~HybridBatch() = default;

Result<std::unique_ptr<HybridBatch>> HybridBatch::create(const HybridModel& m, ThreadPool& pool,
                                                         const HybridBatchOptions& o) {
  const ModelConfig& c = m.config();
  const BatchOptions& b = o.batch;
  if (b.max_sequences < 1 || b.max_tokens < 1 || b.max_batch_tokens < 1)
    return invalid_argument("hybrid batch: max_sequences {}, max_tokens {}, max_batch_tokens {}: each must be >= 1",
                            b.max_sequences, b.max_tokens, b.max_batch_tokens);
  if (b.max_tokens > c.context)
    return invalid_argument("hybrid batch: max_tokens {} exceeds the context of {}", b.max_tokens, c.context);
  int attention_layers = 0;
  for (int l = 0; l < c.n_layers; ++l) attention_layers += c.is_kda_layer(l) ? 0 : 1;
  if (int(o.kv_dtypes.size()) != attention_layers)
    return invalid_argument("hybrid batch: {} KV dtypes for {} attention layers", o.kv_dtypes.size(), attention_layers);
  const HybridLayerWeights& first = m.layers[0];
  const Weight& down = c.n_experts == 0 ? first.w_down : first.exp_down[0];
  RECUR_RETURN_IF_ERROR(hybrid::check_tp_split(c, o.tp, gguf::block_layout(down.type).elements, o.layer_split));
  const int ep = o.ep.ep, ranks = std::max(o.tp, ep);
  if (ep > 1 && c.n_experts == 0) return invalid_argument("engine.ep={}: the model has no MoE experts", ep);
  if (ep > 1 && c.n_experts % ep != 0)
    return invalid_argument("engine.ep={} does not divide the {} experts (each rank holds whole experts)", ep,
                            c.n_experts);
  if (o.tp > 1 && ep > 1 && o.tp != ep)
    return invalid_argument("engine.tp={} and engine.ep={}: with both above 1 they must be equal (one group of ranks)",
                            o.tp, ep);
  const bool layer_split = o.layer_split && o.tp > 1;
  if (layer_split && o.collectives == CollectivesBackend::kMpi && attention_layers < o.tp)
    return invalid_argument("engine.layer_split=on with engine.collectives=mpi: {} attention layers for engine.tp={} "
                            "ranks; every process must own one (it checks KV admission on its own pages)",
                            attention_layers, o.tp);
  std::unique_ptr<HybridBatch> batch(new HybridBatch(m, pool, o));
  batch->slots_.resize(size_t(b.max_sequences));
  for (int l = 0, a = 0; l < c.n_layers; ++l) batch->attention_index_.push_back(c.is_kda_layer(l) ? -1 : a++);
  const int64_t kv_pages = o.kv_pages > 0 ? o.kv_pages : b.max_sequences * batch_kv_pages_for(b.max_tokens);
  const int64_t M = b.max_batch_tokens, K = c.kda_head_dim, hd = c.head_dim;
  batch->group_ranks_ = ranks;
  int first_rank = 0, end_rank = ranks;  // the ranks this process runs
  if (o.collectives == CollectivesBackend::kMpi) {
    RECUR_ASSIGN_OR_RETURN(batch->process_comm_, make_process_collectives(ranks, o.reduce));
    first_rank = batch->process_comm_->process_rank();
    end_rank = first_rank + 1;
  }
  for (int index = first_rank; index < end_rank; ++index) {
    auto r = std::make_unique<Rank>();
    RECUR_ASSIGN_OR_RETURN(r->w, hybrid::shard_rank(m, index, o.tp, ep, o.precision, o.act, layer_split));
    int64_t q_w = 0, k_w = 0, v_w = 0, hv = 0, kv_heads = 0;
    std::vector<paged_attn::KvDType> kv_dtypes;  // of the layers this rank holds KV for
    r->kda.resize(size_t(c.n_layers));
    r->kv_layer.assign(size_t(c.n_layers), -1);
    for (int l = 0; l < c.n_layers; ++l) {
      const hybrid::LayerShard& S = r->w.layers[size_t(l)];
      if (!c.is_kda_layer(l)) {
        if (!S.owns_attention) continue;
        r->kv_layer[size_t(l)] = int(kv_dtypes.size());
        kv_dtypes.push_back(o.kv_dtypes[size_t(batch->attention_index_[size_t(l)])]);
        kv_heads = S.kv_heads.size();
        q_w = std::max(q_w, S.heads.size() * hd);
        k_w = std::max(k_w, kv_heads * hd);
        v_w = std::max(v_w, kv_heads * hd);
        continue;
      }
      hv = S.v_heads.size();
      q_w = std::max(q_w, S.k_heads.size() * K);
      k_w = std::max(k_w, S.k_heads.size() * K);
      v_w = std::max(v_w, hv * K);
      r->kda[size_t(l)].resize(size_t(b.max_sequences));  // states are made when a slot is first used
    }
    if (!kv_dtypes.empty()) {
      // Every rank's pool has the same pages (a page is 16 positions of every layer it holds).
      paged_attn::KvCacheConfig kc{.kv_heads = int(kv_heads), .head_dim = int(hd), .page_size = kBatchKvPageSize,
                             .num_pages = kv_pages, .layer_dtypes = std::move(kv_dtypes)};
      RECUR_ASSIGN_OR_RETURN(paged_attn::PagedKvCache cache, paged_attn::PagedKvCache::create(kc));
      r->kv.emplace(std::move(cache));
    }
    r->kv_seq.assign(size_t(b.max_sequences), -1);
    const int64_t ffn = ep > 1 ? c.ffn_dim : r->w.ffn.size();  // EP: whole experts
    for (auto* buf : {&r->x, &r->h, &r->partial, &r->ff_out, &r->xg}) buf->resize(size_t(M * c.dim));
    r->q.resize(size_t(M * q_w));
    r->k.resize(size_t(M * k_w));
    r->v.resize(size_t(M * v_w));
    r->o.resize(size_t(M * std::max(q_w, v_w)));
    r->g.resize(size_t(M * hv * K));
    r->gate.resize(size_t(M * hv * K));
    r->b.resize(size_t(M * hv));
    r->ff_a.resize(size_t(M * ffn));
    r->ff_b.resize(size_t(M * ffn));
    r->router.resize(size_t(M * c.n_experts));
    r->norm_w.resize(size_t(c.dim));
    batch->ranks_.push_back(std::move(r));
  }
  if (ranks > 1 && !batch->process_comm_) {
    RECUR_ASSIGN_OR_RETURN(batch->runner_, RankRunner::create(ranks, M * c.dim, o.reduce));
  }
  // Every local rank holds its copies now: drop the file pages they were copied from, so TP > 1
  // does not keep both (the ranks copy the same sources; under MPI this process's rank only).
  RECUR_ASSIGN_OR_RETURN(batch->released_source_bytes_,
                         release_copied_sources(m.file().mapping(), batch->ranks_[0]->w.copied_sources));
  return batch;
}

Result<SeqId> HybridBatch::add_sequence() {
  RECUR_ASSIGN_OR_RETURN(size_t slot, batch_free_slot("hybrid batch", slots_));
  const ModelConfig& c = m_.config();
  for (auto& r : ranks_) {
    for (int l = 0; l < c.n_layers; ++l) {
      if (!c.is_kda_layer(l)) continue;
      std::optional<hybrid::KdaSequenceState>& state = r->kda[size_t(l)][slot];
      if (state) {
        state->reset();
        continue;
      }
      RECUR_ASSIGN_OR_RETURN(state, hybrid::KdaSequenceState::create(r->w.layers[size_t(l)], c.kda_head_dim,
                                                                     c.conv_size, options_.kda));
    }
  }
  for (auto& r : ranks_) {
    if (r->kv) {
      RECUR_ASSIGN_OR_RETURN(r->kv_seq[slot], r->kv->add_sequence());
    }
  }
  slots_[slot] = {.live = true, .position = 0};
  return SeqId(slot);
}

Status HybridBatch::free_sequence(SeqId seq) {
  if (position(seq) < 0)
    return not_found("hybrid batch: free_sequence: no live sequence {}", seq);
  for (auto& r : ranks_) {
    if (r->kv) RECUR_RETURN_IF_ERROR(r->kv->free_sequence(r->kv_seq[size_t(seq)]));
    r->kv_seq[size_t(seq)] = -1;
  }
  slots_[size_t(seq)] = BatchSlot{};
  return ok_status();
}

int HybridBatch::position(SeqId seq) const { return batch_slot_position(slots_, seq); }

KvUsage HybridBatch::kv_usage() const {
  KvUsage u;
  const std::vector<int64_t> bytes = kv_bytes_per_rank();
  for (int64_t b : bytes) u.bytes_total += b;
  // Pages are per rank and every rank's pool is alike (same pages, same sequences): one counts.
  if (const paged_attn::PagedKvCache* kv = admission_kv()) {
    u.pages_total = kv->config().num_pages;
    u.pages_used = u.pages_total - kv->free_pages();
  }
  return u;
}

std::vector<int64_t> HybridBatch::kv_bytes_per_rank() const {
  std::vector<int64_t> bytes;
  for (const auto& r : ranks_) {
    int64_t b = 0;
    if (r->kv) {
      const paged_attn::KvCacheConfig& c = r->kv->config();
      for (int l = 0; l < r->kv->layers(); ++l) b += int64_t(r->kv->token_bytes(l)) * c.page_size * c.num_pages;
    }
    bytes.push_back(b);
  }
  return bytes;
}

const kernels::attention::PagedKvCache* HybridBatch::admission_kv() const {
  for (const auto& r : ranks_)
    if (r->kv) return &*r->kv;
  return nullptr;
}

Status HybridBatch::state_parts(SeqId seq, SequenceStateParts& out) {
  if (position(seq) < 0) return not_found("hybrid batch: state_parts: no live sequence {}", seq);
  if (options_.tp > 1)
    return unsupported("hybrid batch: sequence state export/import is refused for engine.tp>1 (each rank holds a "
                       "shard of the KV heads and KDA states; got engine.tp={}); engine.ep>1 with engine.tp=1 works",
                       options_.tp);
  if (options_.kda.replay)
    return unsupported("hybrid batch: sequence state export/import needs engine.kda.replay=off (a ReplaySSM state "
                       "is a checkpoint plus a window)");
  // With tp = 1 every rank computes the attention and KDA mixers whole (hybrid_shard.cc: ranks
  // replicate), so each local rank holds the same state: rank 0's is the one exported, the
  // others are replicas that import writes too. Under mpi this process has only its own rank
  // (no replicas here): every process would import the same blocks (untested).
  auto rank_parts = [&](Rank& r) {
    SequenceStateParts p{.kv = r.kv ? &*r.kv : nullptr, .kv_seq = r.kv_seq[size_t(seq)], .kv_layer = r.kv_layer,
                         .kda = {}, .position = &slots_[size_t(seq)].position, .replicas = {}};
    for (int l = 0; l < m_.config().n_layers; ++l)
      p.kda.push_back(m_.config().is_kda_layer(l) ? &*r.kda[size_t(l)][size_t(seq)] : nullptr);
    return p;
  };
  out = rank_parts(*ranks_[0]);
  for (size_t i = 1; i < ranks_.size(); ++i) out.replicas.push_back(rank_parts(*ranks_[i]));
  return ok_status();
}

Result<HybridBatch::Plan> HybridBatch::plan(std::span<const BatchToken> tokens) const {
  return plan_batch("hybrid batch", tokens, slots_, options_.batch, m_.config().vocab, admission_kv());
}

Result<std::span<const float>> HybridBatch::forward(std::span<const BatchToken> tokens) {
  RECUR_ASSIGN_OR_RETURN(Plan p, plan(tokens));
  if (p.rows() == 0) return std::span<const float>();
  RECUR_ZONE("forward");
  zone.arg("rows", p.rows());
  zone.arg("sequences", int64_t(p.runs.size()));
  zone.arg("tp", int64_t(options_.tp));
  zone.arg("ep", int64_t(options_.ep.ep));
  const size_t vocab = size_t(m_.config().vocab);
  if (logits_.size() < p.want.size() * vocab) logits_.resize(p.want.size() * vocab);
  tap_rows_ = op_tap_ != nullptr && p.rows() == 1;
  if (ranks_.size() == 1) rank_forward(*ranks_[0], p);
  else runner_->run([&](int r) { rank_forward(*ranks_[size_t(r)], p); });
  for (const Plan::Run& run : p.runs) slots_[size_t(run.seq)].position += int(run.count);
  for (auto& r : ranks_) {
    Status s = std::exchange(r->status, ok_status());
    RECUR_RETURN_IF_ERROR(s);
  }
  return std::span<const float>(logits_.data(), p.want.size() * vocab);
}

// The tap (op_tap.h): `op` and `inputs` are names inside layer l ("<stream>" is the residual
// stream entering it); with l < 0 they are whole names. Replicated tensors come from rank 0.
void HybridBatch::record(const Rank& r, int l, std::string_view op, std::string_view component,
                         std::initializer_list<std::string_view> inputs, OpShard shard, const float* data, int64_t n,
                         int64_t offset, int64_t size) const {
  if ((shard == OpShard::kWhole || options_.tp == 1) && r.w.index != 0) return;  // replicated: rank 0's
  auto name = [&](std::string_view o) {
    if (l < 0) return std::string(o);
    if (o == "<stream>") return l == 0 ? std::string("embed") : fmt::format("layer.{}.residual", l - 1);
    return fmt::format("layer.{}.{}", l, o);
  };
  OpRecord rec{.name = name(op), .component = std::string(component), .inputs = {}, .rank = r.w.index,
               .shard = shard, .offset = offset, .size = size > 0 ? size : n,
               .data = std::span<const float>(data, size_t(n))};
  for (std::string_view in : inputs) rec.inputs.push_back(name(in));
  op_tap_->record(rec);
}

void HybridBatch::all_reduce(Rank& r, int l, int64_t rows, std::string_view op, std::string_view input) {
  const int64_t n = rows * m_.config().dim;
  if (options_.tp > 1) {
    RECUR_ZONE("all_reduce");
    zone.arg("ranks", int64_t(group_ranks_));
    zone.arg("floats", n);
    comm().all_reduce_sum(r.w.index, r.partial.data(), r.partial.data(), n);
  }
  if (tap_rows_) record(r, l, op, "op:all_reduce", {input}, OpShard::kWhole, r.partial.data(), n);
}

void HybridBatch::rank_forward(Rank& r, const Plan& p) {
  const ModelConfig& c = m_.config();
  const int64_t M = p.rows(), dim = c.dim;
  ThreadPool* intra = ranks_.size() == 1 ? &pool_ : nullptr;  // one rank: parallel inside each product
  auto norm_rows = [&](const Weight& w) {
    for (int64_t i = 0; i < M; ++i)
      rmsnorm(r.h.data() + i * dim, r.x.data() + i * dim, w, c.dim, c.rms_eps, r.norm_w.data());
  };
  auto add_partial = [&] {
    for (int64_t i = 0; i < M * dim; ++i) r.x[size_t(i)] += r.partial[size_t(i)];
  };
  batch_embed_rows(p, m_.token_embedding, int(dim), r.x.data());
  if (tap_rows_) record(r, -1, "embed", "engine:embed", {}, OpShard::kWhole, r.x.data(), dim);
  for (int l = 0; l < c.n_layers; ++l) {
    RECUR_ZONE("layer");
    zone.arg("layer", l);
    zone.arg("rank", r.w.index);
    zone.arg("rows", M);
    const HybridLayerWeights& L = m_.layers[size_t(l)];
    zone.arg("kind", L.kda ? "kda" : "attention");
    norm_rows(L.attn_norm);
    if (tap_rows_) record(r, l, "attn_norm", "engine:norm", {"<stream>"}, OpShard::kWhole, r.h.data(), dim);
    if (L.kda) {
      kda_mixer(r, l, p, intra);
      all_reduce(r, l, M, "kda.all_reduce", "kda.out_proj");
    } else {
      attention_mixer(r, l, p, intra);
      all_reduce(r, l, M, "attn.all_reduce", "attn.o_proj");
    }
    add_partial();
    if (tap_rows_)
      record(r, l, "mix_residual", "engine:residual", {"<stream>", L.kda ? "kda.all_reduce" : "attn.all_reduce"},
             OpShard::kWhole, r.x.data(), dim);
    norm_rows(L.ffn_norm);
    if (tap_rows_) record(r, l, "ffn_norm", "engine:norm", {"mix_residual"}, OpShard::kWhole, r.h.data(), dim);
    mlp(r, l, p, intra);
    if (options_.ep.ep > 1) {
      if (tap_rows_) record(r, l, "ffn.all_reduce", "op:moe_combine", {"ffn.moe"}, OpShard::kWhole, r.partial.data(), dim);
    } else {
      all_reduce(r, l, M, "ffn.all_reduce", c.n_experts == 0 ? "ffn.down" : "ffn.moe");
    }
    add_partial();
    if (tap_rows_)
      record(r, l, "residual", "engine:residual", {"mix_residual", "ffn.all_reduce"}, OpShard::kWhole, r.x.data(),
             dim);
    if (observer_ && M == 1 && r.w.index == 0) (*observer_)(l, std::span<const float>(r.x.data(), size_t(dim)));
    if (layer_hook_ && r.w.index == 0) layer_hook_(l);
  }
  // The LM head for the rows that want logits only, in the caller's order.
  const int64_t n = int64_t(p.want.size());
  if (n == 0) return;
  for (int64_t j = 0; j < n; ++j)
    rmsnorm(r.h.data() + j * dim, r.x.data() + p.want[size_t(j)] * dim, m_.output_norm, c.dim, c.rms_eps,
            r.norm_w.data());
  // Vocabulary-parallel LM head: this rank's slice of the shared logits (the all-gather).
  const Span vs = r.w.vocab;
  if (options_.tp == 1) {
    // Replicated ranks: rank 0 writes the shared logits; under mpi every process has its own.
    if (r.w.index == 0 || process_comm_) r.w.output.apply(r.h.data(), n, logits_.data(), intra);
  } else {
    r.logits.resize(size_t(n * vs.size()));
    r.w.output.apply(r.h.data(), n, r.logits.data(), intra);
    if (process_comm_) {
      gather_logits(r, n);  // the other slices live in other processes
    } else {
      for (int64_t j = 0; j < n; ++j)
        std::copy_n(r.logits.data() + j * vs.size(), vs.size(), logits_.data() + j * c.vocab + vs.begin);
    }
  }
  if (tap_rows_) {
    const std::string last = fmt::format("layer.{}.residual", c.n_layers - 1);
    record(r, -1, "output_norm", "engine:norm", {last}, OpShard::kWhole, r.h.data(), dim);
    record(r, -1, "lm_head", "kernel:gemm", {"output_norm"}, OpShard::kSlice, logits_.data() + vs.begin, vs.size(),
           vs.begin, c.vocab);
  }
}

void HybridBatch::kda_mixer(Rank& r, int l, const Plan& p, ThreadPool* intra) {
  RECUR_ZONE("kda_mixer");
  zone.arg("layer", l);
  const ModelConfig& c = m_.config();
  const hybrid::LayerShard& S = r.w.layers[size_t(l)];
  const int64_t M = p.rows(), K = c.kda_head_dim, hv = S.v_heads.size();
  const int64_t qk = S.k_heads.size() * K, vd = hv * K;
  const int64_t q_off = S.k_heads.begin * K, v_off = S.v_heads.begin * K;
  const int64_t qk_all = int64_t(c.kda_key_heads) * K, v_all = int64_t(c.kda_heads) * K;
  const float* h = r.h.data();
  S.wq.apply(h, M, r.q.data(), intra);
  S.wk.apply(h, M, r.k.data(), intra);
  S.wv.apply(h, M, r.v.data(), intra);
  S.wf.apply(h, M, r.g.data(), intra);
  S.wb.apply(h, M, r.b.data(), intra);
  if (tap_rows_) {
    const OpShard sl = OpShard::kSlice;
    record(r, l, "kda.q_proj", "kernel:gemm", {"attn_norm"}, sl, r.q.data(), qk, q_off, qk_all);
    record(r, l, "kda.k_proj", "kernel:gemm", {"attn_norm"}, sl, r.k.data(), qk, q_off, qk_all);
    record(r, l, "kda.v_proj", "kernel:gemm", {"attn_norm"}, sl, r.v.data(), vd, v_off, v_all);
    record(r, l, "kda.f_proj", "kernel:gemm", {"attn_norm"}, sl, r.g.data(), vd, v_off, v_all);
    record(r, l, "kda.b_proj", "kernel:gemm", {"attn_norm"}, sl, r.b.data(), hv, S.v_heads.begin, c.kda_heads);
  }
  for (const Plan::Run& run : p.runs) {
    const int64_t f = run.first;
    hybrid::KdaRows rows{.q = r.q.data() + f * qk, .k = r.k.data() + f * qk, .v = r.v.data() + f * vd,
                         .g = r.g.data() + f * vd, .b = r.b.data() + f * hv, .tokens = run.count};
    Status s = r.kda[size_t(l)][size_t(run.seq)]->run(S, rows, r.o.data() + f * vd, intra, r.ws, r.scratch);
    if (!s && r.status) r.status = std::move(s);
  }
  // The convolutions and the recurrence count as one op: the KDA core.
  if (tap_rows_)
    record(r, l, "kda.core", "kernel:kda_decode", {"kda.q_proj", "kda.k_proj", "kda.v_proj", "kda.f_proj", "kda.b_proj"},
           OpShard::kSlice, r.o.data(), vd, v_off, v_all);
  // Gated RMSNorm per value head.
  S.out_gate.apply(h, M, r.gate.data(), intra);
  if (tap_rows_)
    record(r, l, "kda.gate_proj", "kernel:gemm", {"attn_norm"}, OpShard::kSlice, r.gate.data(), vd, v_off, v_all);
  for (int64_t i = 0; i < M * hv; ++i) {
    float* o = r.o.data() + i * K;
    const float* gate = r.gate.data() + i * K;
    double ss = 0;
    for (int64_t j = 0; j < K; ++j) ss += double(o[j]) * o[j];
    const float inv = 1.0f / std::sqrt(float(ss / double(K)) + c.rms_eps);
    for (int64_t j = 0; j < K; ++j) o[j] = o[j] * inv * S.out_norm[size_t(j)] * hybrid_sigmoid(gate[j]);
  }
  if (tap_rows_)
    record(r, l, "kda.gated_norm", "engine:norm", {"kda.core", "kda.gate_proj"}, OpShard::kSlice, r.o.data(), vd,
           v_off, v_all);
  S.wo.apply(r.o.data(), M, r.partial.data(), intra);
  if (tap_rows_)
    record(r, l, "kda.out_proj", "kernel:gemm", {"kda.gated_norm"}, OpShard::kPartial, r.partial.data(), c.dim);
}

void HybridBatch::attention_mixer(Rank& r, int l, const Plan& p, ThreadPool* intra) {
  RECUR_ZONE("attention");
  zone.arg("layer", l);
  zone.arg("rows", p.rows());
  const ModelConfig& c = m_.config();
  const hybrid::LayerShard& S = r.w.layers[size_t(l)];
  const int64_t M = p.rows(), hd = c.head_dim;
  if (!S.owns_attention) {
    // Layer split: the owner computes the layer whole; this rank adds zeros to the all-reduce.
    std::fill_n(r.partial.begin(), M * c.dim, 0.0f);
    if (tap_rows_) record(r, l, "attn.o_proj", "kernel:gemm", {"attn.core"}, OpShard::kPartial, r.partial.data(), c.dim);
    return;
  }
  const int heads = int(S.heads.size()), kv_heads = int(S.kv_heads.size());
  const int64_t q_local = heads * hd, kv_local = kv_heads * hd;
  const float* h = r.h.data();
  S.wq.apply(h, M, r.q.data(), intra);
  S.wk.apply(h, M, r.k.data(), intra);
  S.wv.apply(h, M, r.v.data(), intra);
  if (tap_rows_) {
    const OpShard sl = OpShard::kSlice;
    const int64_t q_all = int64_t(c.n_heads) * hd, kv_all = int64_t(c.n_kv_heads) * hd;
    record(r, l, "attn.q_proj", "kernel:gemm", {"attn_norm"}, sl, r.q.data(), q_local, S.heads.begin * hd, q_all);
    record(r, l, "attn.k_proj", "kernel:gemm", {"attn_norm"}, sl, r.k.data(), kv_local, S.kv_heads.begin * hd, kv_all);
    record(r, l, "attn.v_proj", "kernel:gemm", {"attn_norm"}, sl, r.v.data(), kv_local, S.kv_heads.begin * hd, kv_all);
  }
  for (int64_t i = 0; i < M; ++i) {
    rope_interleaved(r.q.data() + i * q_local, heads, int(hd), p.positions[size_t(i)], c.rope_theta);
    rope_interleaved(r.k.data() + i * kv_local, kv_heads, int(hd), p.positions[size_t(i)], c.rope_theta);
  }
  const int layer = r.kv_layer[size_t(l)];
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
      s = r.kv->append(seqs[i], layer, std::span<const float>(r.k.data() + int64_t(i) * kv_local, size_t(kv_local)),
                       std::span<const float>(r.v.data() + int64_t(i) * kv_local, size_t(kv_local)));
    if (s) s = paged_attn::decode(*r.kv, layer, seqs, r.q.data(), heads, r.o.data(), {}, intra);
  } else {
    s = paged_attn::prefill(*r.kv, layer, seqs, counts, r.q.data(), r.k.data(), r.v.data(), heads, r.o.data(), {}, intra);
  }
  if (!s && r.status) r.status = std::move(s);
  if (tap_rows_)
    record(r, l, "attn.core", "engine:attention", {"attn.q_proj", "attn.k_proj", "attn.v_proj"}, OpShard::kSlice,
           r.o.data(), q_local, S.heads.begin * hd, int64_t(c.n_heads) * hd);
  S.wo.apply(r.o.data(), M, r.partial.data(), intra);
  if (tap_rows_) record(r, l, "attn.o_proj", "kernel:gemm", {"attn.core"}, OpShard::kPartial, r.partial.data(), c.dim);
}

void HybridBatch::mlp(Rank& r, int l, const Plan& p, ThreadPool* intra) {
  RECUR_ZONE("mlp");
  const ModelConfig& c = m_.config();
  const HybridLayerWeights& L = m_.layers[size_t(l)];
  const hybrid::LayerShard& S = r.w.layers[size_t(l)];
  const int64_t M = p.rows(), dim = c.dim, n = r.w.ffn.size();
  // rows x[m, dim] through one FFN shard: ff_a = silu(gate x) * up x, out = down ff_a.
  auto swiglu_rows = [&](const hybrid::FfnShard& f, const float* x, int64_t m, float* out, bool tap) {
    f.gate.apply(x, m, r.ff_a.data(), intra);
    f.up.apply(x, m, r.ff_b.data(), intra);
    if (tap) {
      record(r, l, "ffn.gate", "kernel:gemm", {"ffn_norm"}, OpShard::kSlice, r.ff_a.data(), n, r.w.ffn.begin, c.ffn_dim);
      record(r, l, "ffn.up", "kernel:gemm", {"ffn_norm"}, OpShard::kSlice, r.ff_b.data(), n, r.w.ffn.begin, c.ffn_dim);
    }
    swiglu(r.ff_a.data(), r.ff_b.data(), int(m * f.gate.rows()));  // EP experts are whole, wider than n
    if (tap)
      record(r, l, "ffn.act", "engine:activation", {"ffn.gate", "ffn.up"}, OpShard::kSlice, r.ff_a.data(), n,
             r.w.ffn.begin, c.ffn_dim);
    f.down.apply(r.ff_a.data(), m, out, intra);
  };
  if (c.n_experts == 0) {
    swiglu_rows(S.dense, r.h.data(), M, r.partial.data(), tap_rows_);
    if (tap_rows_) record(r, l, "ffn.down", "kernel:gemm", {"ffn.act"}, OpShard::kPartial, r.partial.data(), dim);
    return;
  }
  // The router stays fp32 on every rank (replicated): a flip in the top-k is a discontinuity.
  matmul(L.router, r.h.data(), M, r.router.data(), intra, gemm::Q8Activations::kF32);
  if (tap_rows_)
    record(r, l, "ffn.router", "engine:router", {"ffn_norm"}, OpShard::kWhole, r.router.data(), c.n_experts);
  if (options_.ep.ep > 1) {
    moe_expert_parallel(r, l, p, intra);
    return;
  }
  // Rows grouped by expert, so each expert's weights are streamed once per forward.
  std::vector<std::vector<std::pair<int64_t, float>>> routed(size_t(c.n_experts));
  for (int64_t i = 0; i < M; ++i) {
    Route route = route_top_k(std::span<const float>(r.router.data() + i * c.n_experts, size_t(c.n_experts)),
                              c.n_experts_used);
    for (size_t j = 0; j < route.experts.size(); ++j)
      routed[size_t(route.experts[j])].emplace_back(i, route.weights[j]);
  }
  std::fill_n(r.partial.begin(), M * dim, 0.0f);
  for (int e = 0; e < c.n_experts; ++e) {
    const auto& rows = routed[size_t(e)];
    if (rows.empty()) continue;
    const int64_t m = int64_t(rows.size());
    for (int64_t j = 0; j < m; ++j) std::copy_n(r.h.data() + rows[size_t(j)].first * dim, dim, r.xg.data() + j * dim);
    swiglu_rows(S.experts[size_t(e)], r.xg.data(), m, r.ff_out.data(), false);
    for (int64_t j = 0; j < m; ++j) {
      float* y = r.partial.data() + rows[size_t(j)].first * dim;
      const float* t = r.ff_out.data() + j * dim;
      const float w = rows[size_t(j)].second;
      for (int64_t i = 0; i < dim; ++i) y[i] = y[i] + w * t[i];
    }
  }
  if (c.shared_expert) {
    swiglu_rows(S.shared, r.h.data(), M, r.ff_out.data(), false);
    for (int64_t i = 0; i < M * dim; ++i) r.partial[size_t(i)] = r.partial[size_t(i)] + 1.0f * r.ff_out[size_t(i)];
  }
  if (tap_rows_)
    record(r, l, "ffn.moe", "kernel:gemm", {"ffn_norm", "ffn.router"}, OpShard::kPartial, r.partial.data(), dim);
}

// Expert parallelism (moe_ep.h): this rank's rows through dispatch, the experts' ranks and
// combine, plus the shared expert; then every rank gathers all rows' outputs into r.partial.
void HybridBatch::moe_expert_parallel(Rank& r, int l, const Plan& p, ThreadPool* intra) {
  const ModelConfig& c = m_.config();
  const hybrid::LayerShard& S = r.w.layers[size_t(l)];
  const int ranks = group_ranks_;
  const int64_t M = p.rows(), dim = c.dim;
  const Span own = rank_span(M, ranks, r.w.index);
  auto ffn_rows = [&](const hybrid::FfnShard& f, const float* x, int64_t m, float* out) {
    f.gate.apply(x, m, r.ff_a.data(), intra);
    f.up.apply(x, m, r.ff_b.data(), intra);
    swiglu(r.ff_a.data(), r.ff_b.data(), int(m * f.gate.rows()));
    f.down.apply(r.ff_a.data(), m, out, intra);
  };
  const moe::EpLayer layer{.comm = &comm(), .rank = r.w.index, .n_experts = c.n_experts,
                           .top_k = c.n_experts_used, .dim = dim, .mode = options_.ep.mode,
                           .max_rows_per_rank = (M + ranks - 1) / ranks};
  float* y = r.partial.data() + own.begin * dim;
  moe::ep_moe_forward(
      layer, r.h.data() + own.begin * dim, r.router.data() + own.begin * c.n_experts, own.size(),
      [&](int e, const float* x, int64_t m, float* out) { ffn_rows(S.experts[size_t(e)], x, m, out); }, r.ep, y);
  if (c.shared_expert && own.size() > 0) {
    ffn_rows(S.shared, r.h.data() + own.begin * dim, own.size(), r.ff_out.data());
    for (int64_t i = 0; i < own.size() * dim; ++i) y[i] = y[i] + 1.0f * r.ff_out[size_t(i)];
  }
  RECUR_ZONE("all_gather");
  zone.arg("ranks", int64_t(ranks));
  zone.arg("floats", M * dim);
  std::vector<int64_t> bytes;
  for (int q = 0; q < ranks; ++q) bytes.push_back(rank_span(M, ranks, q).size() * dim * int64_t(sizeof(float)));
  comm().all_gather(r.w.index, y, bytes, r.xg.data());
  std::copy_n(r.xg.data(), M * dim, r.partial.data());
  if (tap_rows_) record(r, l, "ffn.moe", "kernel:gemm", {"ffn_norm", "ffn.router"}, OpShard::kWhole, r.partial.data(), dim);
}

// The vocabulary-parallel LM head across processes: every rank's [n, its vocabulary] slice,
// gathered, then placed into this process's [n, vocab] logits.
void HybridBatch::gather_logits(Rank& r, int64_t n) {
  const int64_t vocab = m_.config().vocab;
  std::vector<int64_t> bytes;
  for (int q = 0; q < group_ranks_; ++q)
    bytes.push_back(n * rank_span(vocab, group_ranks_, q).size() * int64_t(sizeof(float)));
  std::vector<float> all(static_cast<size_t>(n * vocab));
  comm().all_gather(r.w.index, r.logits.data(), bytes, all.data());
  const float* from = all.data();
  for (int q = 0; q < group_ranks_; ++q) {
    const Span vs = rank_span(vocab, group_ranks_, q);
    for (int64_t j = 0; j < n; ++j, from += vs.size()) std::copy_n(from, vs.size(), logits_.data() + j * vocab + vs.begin);
  }
}

}  // namespace recur
