// The blocks of the one forward pass (forward.h), each in its own file: rows (norms, residual
// adds, embedding and RoPE tables), the attention mixer, the KDA mixer, the dense FFN, the MoE FFN
// (routed on one rank, or expert-parallel) and the LM head. A block reads and writes one rank's
// row buffers (ForwardRank) for the M rows of one forward (Step); forward.cc composes them.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "core/status.h"
#include "core/thread_pool.h"
#include "engine/batch_plan.h"
#include "engine/collectives.h"
#include "engine/engine_options.h"
#include "engine/hybrid_kda.h"
#include "engine/moe_ep.h"
#include "engine/op_table.h"
#include "engine/rank_weights.h"
#include "engine/transformer.h"
#include "kernels/attention/kv_cache.h"
#include "kernels/kda/kda.h"
#include "kernels/rmsnorm/rmsnorm.h"

namespace recur {

// One rank's shards, KV cache, KDA states and row buffers.
struct ForwardRank {
  RankWeights w;
  std::optional<kernels::attention::PagedKvCache> kv;  // attention layers, this rank's KV heads
  std::vector<int> kv_layer;  // layer -> its layer in `kv` (-1: KDA, or another rank's under layer split)
  // [layer][slot], made when the slot is first used; empty for attention layers.
  std::vector<std::vector<std::optional<hybrid::KdaSequenceState>>> kda;
  std::vector<int> kv_seq;  // slot -> the cache's sequence id
  // Rows of one forward: [max_batch_tokens, width].
  std::vector<float> x, h, partial, q, k, v, g, b, o, gate, ff_a, ff_b, ff_out, xg, router, logits;
  std::vector<float> q_a;       // MLA with a low-rank q: [rows, q_lora_rank]
  std::vector<float> low_rank;  // KDA's low-rank gates (kimi-linear): [rows, rank]
  // [rows, 2 * head_dim]: each row's RoPE tables c then s (kernels::rope_tables), shared by every layer
  // (MLA: [rows, 2 * qk_rope_dim], YaRN's tables, mla_rope_tables)
  std::vector<float> rope;
  std::vector<float> rope_local;  // the sliding layers' own tables, as `rope` (has_local_rope: gemma3); else empty
  std::vector<float> rope_freqs;  // [head_dim / 2] divisors of rope_freqs.weight (Llama 3), widened on first use
  std::vector<float> norm_w, scratch;
  kda::Workspace ws;
  moe::EpWorkspace ep;
  Status status;  // the first error of this forward
  void fail(Status s) {
    if (!s && status) status = std::move(s);
  }
};

// What every block of one rank's forward sees.
struct Step {
  const TransformerModel& m;
  const EngineOptions& o;
  const BatchPlan& p;
  ForwardRank& r;
  ThreadPool* intra;     // one rank: each product is parallel on the pool; several: null
  Collectives* comm;     // the rank group (null with one rank)
  int ranks;             // max(tp, ep)
  bool per_process;      // engine.collectives=mpi: the other ranks are other processes
  float* logits;         // [rows with want_logits, vocab], shared by the local ranks
  OpTapper tap;
  const ModelConfig& c() const { return m.config(); }
  int64_t rows() const { return p.rows(); }
};

// fn(i0, i1) over rows [0, rows) in claimed chunks on the pool (null: on the caller). Each row
// is computed whole by one thread, so the bits do not depend on the pool.
template <class Fn>
void for_rows(ThreadPool* pool, int64_t rows, const Fn& fn) {
  if (pool == nullptr || pool->size() == 1 || rows < 2) {
    fn(int64_t{0}, rows);
    return;
  }
  const int64_t per_chunk = std::max<int64_t>(1, rows / (4 * int64_t(pool->size())));
  pool->parallel_claim((rows + per_chunk - 1) / per_chunk,
                       [&](int64_t c, int) { fn(c * per_chunk, std::min(rows, (c + 1) * per_chunk)); });
}

// rows.cc: x = each row's embedding (and the RoPE tables when the model has attention);
// h = RMSNorm(x) * w; x += partial; x += partial then h = RMSNorm(x) * w in one pass. norm_weight:
// w as fp32 in the rank's norm_w (once per op, any storage type).
void embed_rows(const Step& s);
void norm_rows(const Step& s, const Weight& w);
void add_partial_rows(const Step& s);
void add_partial_norm_rows(const Step& s, const Weight& w);
// partial = RMSNorm(partial) * w in place (post_norms: after the all-reduce, so every rank has it whole).
void norm_partial_rows(const Step& s, const Weight& w);
const float* norm_weight(const Step& s, const Weight& w);
// The RMSNorm every block runs: the registered rmsnorm kernel at its variant, or ggml's
// (ggml_arith::rms_norm_row) under engine.ggml_arithmetic.
kernels::RmsNormFn rmsnorm_for(const Step& s);
// ffn.cc: rows [m, dim] of x through one FFN (shard): out = down(silu(gate x) * up x); with
// tap_layer >= 0 the gate, up and activation are tapped as layer tap_layer's dense FFN.
void ffn_rows(const Step& s, const FfnShard& f, const float* x, int64_t m, float* out, int tap_layer = -1);
// GELU, tanh approximation (ffn_gelu: gemma's gated FFN).
float gelu_tanh(float x);
// ggml's GELU table (engine.gelu=fp16_table): gelu_tanh(fp16(x)) rounded to fp16; 0 at x <= -10, x at x >= 10.
float gelu_fp16_table(float x);

// projections.cc: y = W x for several projections of the same m rows x (each out's rows
// written to its y), in one parallel region for a decode step of fp32 weights.
struct ProjectionOut {
  const Projection* p;
  float* y;
};
void project_rows(const Step& s, const float* x, int64_t m, std::span<const ProjectionOut> outs);

// The token mixers: h -> partial (this rank's addend of the layer's output).
// Layer split (attention_mixer.cc): true when another rank owns attention layer l; this rank's
// partial is then zeros (its addend to the all-reduce) and the mixer has nothing to do.
bool layer_split_elsewhere(const Step& s, int l);
void attention_mixer(const Step& s, int l);
void mla_mixer(const Step& s, int l);  // mla_mixer.cc; MLA layers (LayerWeights::mla)
void mla_rope_tables(const Step& s);   // the rows' YaRN tables into r.rope (embed_rows calls it)
void kda_mixer(const Step& s, int l);
// The FFNs: h -> partial. moe_ffn with engine.ep > 1 leaves every row's whole output.
void dense_ffn(const Step& s, int l);
void moe_ffn(const Step& s, int l);
// moe_gating.cc: each row's top-k experts (ids, weights [rows, k]) from the router logits in
// s.r.router: the registered route_topk for the hybrid's softmax gating, deepseek2's gating
// (model_config.h: sigmoid or softmax, selection bias, optional renormalization, scale) otherwise.
Status route_rows(const Step& s, int l, int32_t* ids, float* weights);
// Final norm and the vocabulary-parallel LM head for the rows with want_logits.
void lm_head(const Step& s);

}  // namespace recur
