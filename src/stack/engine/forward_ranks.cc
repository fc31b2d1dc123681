// Forward's ranks and sequences: each local rank's shards, KV pool, KDA states and row buffers,
// and the slots that sequences live in (add, free, admission, state export).
#include <algorithm>

#include "engine/blocks/block.h"
#include "engine/forward.h"
#include "engine/sequence_state.h"

namespace recur {

namespace paged_kv = kernels::attention;

Status Forward::add_rank(int index) {
  const ModelConfig& c = m_.config();
  const EngineOptions& o = options_;
  const BatchOptions& b = batch_;
  const int ep = o.ep.ep;
  const int64_t M = b.max_batch_tokens, K = c.kda_head_dim, hd = c.head_dim;
  const int64_t kv_pages = o.kv_pages > 0 ? o.kv_pages : b.max_sequences * batch_kv_pages_for(b.max_tokens);
  auto r = std::make_unique<ForwardRank>();
  ProjectionForm form{.act = o.act, .kernels = o.kernels.projections};
  if (o.ggml) form.ggml = GgmlMatmul{.isa = *o.ggml};
  RECUR_ASSIGN_OR_RETURN(r->w, shard_rank(m_, index, o.tp, ep, o.precision, form, o.layer_split && o.tp > 1));
  int64_t q_w = 0, k_w = 0, v_w = 0, hv = 0, kv_heads = 0, gate_w = 0;
  std::vector<paged_kv::KvDType> kv_dtypes;  // of the layers this rank holds KV for
  bool any_attention = false;
  r->kda.resize(size_t(c.n_layers));
  r->kv_layer.assign(size_t(c.n_layers), -1);
  for (int l = 0; l < c.n_layers; ++l) {
    const LayerShard& S = r->w.layers[size_t(l)];
    if (!c.is_kda_layer(l)) {
      any_attention = true;
      if (!S.owns_attention) continue;
      r->kv_layer[size_t(l)] = int(kv_dtypes.size());
      kv_dtypes.push_back(o.kv_dtypes[size_t(attention_index_[size_t(l)])]);
      if (c.is_mla()) {
        // MLA (blocks/mla_mixer.cc): q [heads, nope + rope], latents [rank + rope], out [heads, v].
        q_w = std::max<int64_t>(q_w, int64_t(c.n_heads) * c.head_dim);
        k_w = std::max<int64_t>(k_w, c.kv_lora_rank + c.qk_rope_dim);
        v_w = std::max<int64_t>(v_w, int64_t(c.n_heads) * c.v_head_dim);
        continue;
      }
      kv_heads = S.kv_heads.size();
      q_w = std::max(q_w, S.heads.size() * hd * (c.attn_output_gate ? 2 : 1));  // the gate's rows too
      gate_w = std::max(gate_w, c.attn_output_gate ? S.heads.size() * hd : 0);
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
    // MLA: one [latent ; rope key] vector per token (kernels/mla/mla.h).
    paged_kv::KvCacheConfig kc{.kv_heads = c.is_mla() ? 1 : int(kv_heads),
                               .head_dim = c.is_mla() ? c.kv_lora_rank + c.qk_rope_dim : int(hd),
                               .page_size = kBatchKvPageSize, .num_pages = kv_pages,
                               .layer_dtypes = std::move(kv_dtypes), .keys_only = c.is_mla()};
    RECUR_ASSIGN_OR_RETURN(paged_kv::PagedKvCache cache, paged_kv::PagedKvCache::create(kc));
    r->kv.emplace(std::move(cache));
  }
  r->kv_seq.assign(size_t(b.max_sequences), -1);
  // EP: whole experts; else this rank's share of the widest FFN of any layer (deepseek2's differ).
  int64_t ffn = std::max<int64_t>(ep > 1 ? c.ffn_dim : r->w.ffn.size(), (c.max_ffn_width() + o.tp - 1) / o.tp);
  if (ep > 1 && c.n_experts > 0 && c.shared_expert) ffn = std::max<int64_t>(ffn, c.shared_width());  // whole
  for (auto* buf : {&r->x, &r->h, &r->partial, &r->ff_out, &r->xg}) buf->resize(size_t(M * c.dim));
  r->q.resize(size_t(M * q_w));
  r->k.resize(size_t(M * k_w));
  r->v.resize(size_t(M * v_w));
  r->o.resize(size_t(M * std::max(q_w, v_w)));
  r->g.resize(size_t(M * hv * K));
  r->gate.resize(size_t(M * std::max(hv * K, gate_w)));
  r->b.resize(size_t(M * hv));
  r->ff_a.resize(size_t(M * ffn));
  r->ff_b.resize(size_t(M * ffn));
  r->router.resize(size_t(M * c.n_experts));
  r->q_a.resize(size_t(M * c.q_lora_rank));
  int64_t low_rank = 0;
  for (const LayerWeights& L : m_.layers) low_rank = std::max({low_rank, L.wf_a.rows, L.out_gate_a.rows});
  r->low_rank.resize(size_t(M * low_rank));
  r->norm_w.resize(size_t(c.dim));
  if (any_attention) r->rope.resize(size_t(M * 2 * (c.is_mla() ? c.qk_rope_dim : hd)));
  if (any_attention && c.has_local_rope()) r->rope_local.resize(size_t(M * 2 * hd));
  ranks_.push_back(std::move(r));
  return ok_status();
}

Result<SeqId> Forward::add_sequence() {
  RECUR_ASSIGN_OR_RETURN(size_t slot, batch_free_slot(who_, slots_));
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

Status Forward::free_sequence(SeqId seq) {
  if (position(seq) < 0) return not_found("{}: free_sequence: no live sequence {}", who_, seq);
  for (auto& r : ranks_) {
    if (r->kv) RECUR_RETURN_IF_ERROR(r->kv->free_sequence(r->kv_seq[size_t(seq)]));
    r->kv_seq[size_t(seq)] = -1;
  }
  slots_[size_t(seq)] = BatchSlot{};
  return ok_status();
}

int Forward::position(SeqId seq) const { return batch_slot_position(slots_, seq); }

KvUsage Forward::kv_usage() const {
  KvUsage u;
  for (int64_t b : kv_bytes_per_rank()) u.bytes_total += b;
  // Pages are per rank and every rank's pool is alike (same pages, same sequences): one counts.
  if (const paged_kv::PagedKvCache* kv = admission_kv()) {
    u.pages_total = kv->config().num_pages;
    u.pages_used = u.pages_total - kv->free_pages();
  }
  return u;
}

std::vector<int64_t> Forward::kv_bytes_per_rank() const {
  std::vector<int64_t> bytes;
  for (const auto& r : ranks_) {
    int64_t b = 0;
    if (r->kv) {
      const paged_kv::KvCacheConfig& c = r->kv->config();
      for (int l = 0; l < r->kv->layers(); ++l) b += int64_t(r->kv->token_bytes(l)) * c.page_size * c.num_pages;
    }
    bytes.push_back(b);
  }
  return bytes;
}

const paged_kv::PagedKvCache* Forward::admission_kv() const {
  for (const auto& r : ranks_)
    if (r->kv) return &*r->kv;
  return nullptr;
}

Result<BatchPlan> Forward::plan(std::span<const BatchToken> tokens) const {
  return plan_batch(who_, tokens, slots_, batch_, m_.config().vocab, admission_kv());
}

Status Forward::state_parts(SeqId seq, SequenceStateParts& out) {
  if (position(seq) < 0) return not_found("{}: state_parts: no live sequence {}", who_, seq);
  if (options_.tp > 1)
    return unsupported("{}: sequence state export/import is refused for engine.tp>1 (each rank holds a shard of the "
                       "KV heads and KDA states; got engine.tp={}); engine.ep>1 with engine.tp=1 works",
                       who_, options_.tp);
  if (options_.kda.replay)
    return unsupported("{}: sequence state export/import needs engine.kda.replay=off (a ReplaySSM state is a "
                       "checkpoint plus a window)",
                       who_);
  // With tp = 1 every rank computes the attention and KDA mixers whole (rank_weights.cc: ranks
  // replicate), so each local rank holds the same state: rank 0's is the one exported, the
  // others are replicas that import writes too. Under mpi this process has only its own rank
  // (no replicas here): every process would import the same blocks (untested).
  const ModelConfig& c = m_.config();
  auto rank_parts = [&](ForwardRank& r) {
    SequenceStateParts p{.kv = r.kv ? &*r.kv : nullptr, .kv_seq = r.kv_seq[size_t(seq)], .kv_layer = r.kv_layer,
                         .kda = {}, .position = &slots_[size_t(seq)].position, .replicas = {}};
    for (int l = 0; l < c.n_layers; ++l) p.kda.push_back(c.is_kda_layer(l) ? &*r.kda[size_t(l)][size_t(seq)] : nullptr);
    return p;
  };
  out = rank_parts(*ranks_[0]);
  for (size_t i = 1; i < ranks_.size(); ++i) out.replicas.push_back(rank_parts(*ranks_[i]));
  return ok_status();
}

}  // namespace recur
