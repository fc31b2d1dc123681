// What one tensor-parallel rank of the forward pass (forward.h) owns (docs/engine.md, "Tensor
// parallelism"): its KDA value heads and the key heads they read, its attention heads and KV
// heads, its FFN columns of the dense MLP and of every expert, and its vocabulary rows of the LM
// head, as projections at the chosen matmul precision (projection.h). Built once per session or
// batch; immutable afterwards.
#pragma once

#include <optional>
#include <vector>

#include "core/status.h"
#include "engine/transformer.h"
#include "engine/projection.h"
#include "engine/tensor_parallel.h"

namespace recur {

struct FfnShard {
  Projection gate, up, down;  // down: row-parallel (this rank's FFN columns)
};

struct LayerShard {
  // KDA: value heads, and the key heads they read (ranks may share a key head, as GQA ranks
  // share a KV head). Attention: heads and KV heads. wo is row-parallel in both.
  // With layer split an attention layer is whole on its owner rank and empty (no heads, no
  // projections, owns_attention false) on the others.
  Span v_heads, k_heads, heads, kv_heads;
  bool owns_attention = true;
  Projection wq, wk, wv, wf, wb, out_gate, wo;
  // Low-rank KDA gates (kimi-linear): the first factor, whole on every rank (its output is the
  // rank, not heads); wf and out_gate then hold the second factor's rows of this rank's heads.
  std::optional<Projection> wf_a, out_gate_a;
  // MLA (blocks/mla_mixer.cc): heads split like attention's; wq (or wq_b after the whole wq_a)
  // holds this rank's heads' rows, wkv_a is whole on every rank (each keeps the whole latent
  // cache), wo is row-parallel over the heads' value columns.
  Projection wq_a, wq_b, wkv_a;
  std::vector<float> conv_q, conv_k, conv_v;  // [channels, conv_size], widened once
  std::vector<float> a_log, dt_bias, out_norm;
  // Attention features (empty when the architecture lacks them): this rank's q/k/v bias
  // entries, the per-head QK norm weights (whole), the shared expert gate's row (whole).
  std::vector<float> bq, bk, bv, q_norm, k_norm, sh_gate_inp;
  FfnShard dense, shared;
  std::vector<FfnShard> experts;  // [n_experts]; with ep > 1 only this rank's are set
};

struct RankWeights {
  int index = 0;     // the rank in the group (tp > 1 or ep > 1)
  Span ffn, vocab;   // tensor-parallel shares (everything when tp = 1)
  Span shared_ffn;   // the shared expert's columns (its width may differ from the experts')
  Span experts;      // the experts held whole (ep > 1), else empty
  std::vector<LayerShard> layers;
  Projection output;  // this rank's vocabulary rows of the LM head
  // The weights whose columns this rank copied (row-parallel shards at tp > 1: KDA and
  // attention wo, dense/expert/shared down); once every rank holds its copies their file pages
  // can be released (release_copied_sources). Views (tp = 1, layer split, ep) are not listed.
  std::vector<const Weight*> copied_sources;
};

// Checks that `tp` splits every sharded dimension of `c` evenly and into whole storage blocks
// (with layer_split, attention layers are not head-split, so their heads are not checked).
Status check_tp_split(const ModelConfig& c, int tp, int64_t block, bool layer_split = false);

// Layer split (knob engine.layer_split, docs/engine.md): the rank that owns the attention layer
// with index `attention_index` among the attention layers (round robin over the tp ranks).
inline int layer_split_owner(int attention_index, int tp) { return attention_index % tp; }

// Rank `index`'s shards of every layer, in a group of max(tp, ep) ranks where tp and ep are
// each 1 or the group size: tensor-parallel shards when tp > 1 (whole weights otherwise), and
// its whole experts when ep > 1. With layer_split (and tp > 1) each attention layer is whole on
// its owner (layer_split_owner) and empty elsewhere.
Result<RankWeights> shard_rank(const TransformerModel& m, int index, int tp, int ep, gemm::Precision precision,
                               const ProjectionForm& form, bool layer_split = false);

}  // namespace recur
