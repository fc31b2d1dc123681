// HybridBatch: the hybrid forward pass (hybrid.h) over a flat list of tokens of several
// sequences (model.h's Batch contract). One forward():
//   - groups the tokens by sequence (each sequence's tokens keep their order; sequences are
//     independent, so the rows may be reordered), giving one run of rows per sequence;
//   - runs every projection once for all rows (Projection::apply with m rows: each weight is
//     streamed once per forward), norms and residuals per row;
//   - KDA layers per run: the sequence's convolution windows and state ([HV, K, V], plain or
//     ReplaySSM; hybrid_kda.h), a decode step for a run of one token, kda::prefill for longer.
//     A slot's states are allocated when it is first used and zeroed when it is reused;
//   - attention layers over a paged KV cache (kernels/attention PagedKvCache, pages of 16 tokens,
//     one page table per sequence, element type per layer from engine.kv_dtype.layer[N]): a batch of one-token runs appends and runs the paged
//     decode kernel, otherwise the paged prefill kernel (causal within each run);
//   - MoE: routing per row, then rows grouped by expert so each expert's weights are read once;
//   - the LM head only for rows with want_logits.
// Tensor parallelism (engine.tp): every rank runs the same forward on its shards
// (hybrid_shard.h) with its own KV cache of its KV heads and its KDA states of its value heads;
// all-reduces carry all rows at once.
// Layer split (engine.layer_split=on, tp > 1): each attention layer is whole on one owner rank
// (the i-th attention layer on rank i mod tp), which alone holds its KV (all KV heads) and
// computes it; the other ranks contribute zeros to the layer's all-reduce (rank order, so the
// sum is the owner's output exactly). KDA layers and the FFN stay split. A rank's pages cover
// only its own layers.
// Expert parallelism (engine.ep, moe_ep.h): max(tp, ep) ranks; each MoE layer's experts are
// split whole across them, rank r owns the batch's rows rank_span(rows, ranks, r) and runs
// dispatch / its experts / combine plus the shared expert for them, and an all_gather of the
// owners' rows gives every rank the layer's output. With tp = 1 the ranks replicate the
// attention and KDA mixers (each computes them whole; data-parallel attention is not built).
// Collectives (engine.collectives): threads runs every rank here on pinned threads; mpi runs one
// rank per process under mpirun (this process's rank only; every process returns all logits).
//
// Errors (unknown sequence, token outside the vocabulary, more than max_batch_tokens, a
// sequence past max_tokens, the KV pages exhausted) are found before anything changes, so they
// leave every sequence as it was. The KV pool holds engine.hybrid.kv_pages pages (default:
// enough for max_sequences sequences of max_tokens).
// Op taps and the layer observer (model.h) see single-row forwards only (a session's step).
// Thread-safety: one call at a time; it runs on the pool it was given (or on its rank threads).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/hybrid.h"
#include "engine/hybrid_kda.h"
#include "engine/batch_plan.h"
#include "engine/model.h"
#include "engine/moe_ep.h"
#include "engine/tensor_parallel.h"
#include "kernels/attention/kv_cache.h"

namespace recur {

struct HybridBatchOptions {
  BatchOptions batch;
  hybrid::KdaOptions kda;
  int tp = 1;
  moe::EpOptions ep;
  CollectivesBackend collectives = CollectivesBackend::kThreads;
  ReduceDtype reduce = ReduceDtype::kF32;
  gemm::Precision precision = gemm::Precision::kF32;
  gemm::Activations act = kDefaultActivations;
  int64_t kv_pages = 0;  // 0: max_sequences * ceil(max_tokens / page size)
  bool layer_split = false;  // engine.layer_split; takes effect with tp > 1
  std::vector<kernels::attention::KvDType> kv_dtypes;  // one per attention layer, in layer order
};

// Reads engine.tp, engine.tp.reduce_dtype, engine.layer_split, engine.ep, engine.ep.dispatch_mode, engine.collectives,
// kernel.gemm.precision, kernel.gemm.q8_0_activations, kernel.gemm.f16_activations,
// engine.kda.{decode_variant, prefill_variant, replay, replay_window}, engine.hybrid.kv_pages and
// engine.kv_dtype.layer[N] for every attention layer N of `c`.
Result<HybridBatchOptions> hybrid_batch_options(const Config& knobs, const ModelConfig& c, const BatchOptions& batch);

class HybridBatch final : public Batch {
 public:
  static Result<std::unique_ptr<HybridBatch>> create(const HybridModel& m, ThreadPool& pool,
                                                     const HybridBatchOptions& options);
  ~HybridBatch() override;

  Result<SeqId> add_sequence() override;
  Status free_sequence(SeqId seq) override;
  int position(SeqId seq) const override;  // -1 for a sequence that is not live
  Result<std::span<const float>> forward(std::span<const BatchToken> tokens) override;
  KvUsage kv_usage() const override;
  // Bytes of each local rank's KV pool, in rank order (0 for a rank that holds no attention
  // layer under layer split).
  std::vector<int64_t> kv_bytes_per_rank() const;
  // sequence_state.h; tp = 1 only (any ep: the ranks' replicated copies are the parts' replicas)
  Status state_parts(SeqId seq, SequenceStateParts& out) override;

  const BatchOptions& options() const { return options_.batch; }
  // Bytes of file pages released after sharding: the row-parallel sources every local rank
  // copied (tp > 1; 0 otherwise or for weights not in a file map). docs/engine.md, TP memory.
  size_t released_source_bytes() const { return released_source_bytes_; }
  // Observers of single-row forwards (model.h's Session::set_op_tap / set_layer_observer).
  void set_op_tap(OpTap* tap) { op_tap_ = tap; }
  using LayerObserver = std::function<void(int layer, std::span<const float> residual)>;
  void set_layer_observer(const LayerObserver* f) { observer_ = f; }

  struct Rank;  // one rank's shards, KV cache, KDA states and buffers (hybrid_batch.cc)
  using Plan = BatchPlan;

 private:
  HybridBatch(const HybridModel& m, ThreadPool& pool, const HybridBatchOptions& options);
  Result<Plan> plan(std::span<const BatchToken> tokens) const;
  // The pool that KV admission is checked against (every rank's has the same pages); null
  // without attention layers.
  const kernels::attention::PagedKvCache* admission_kv() const;
  void rank_forward(Rank& r, const Plan& p);
  void kda_mixer(Rank& r, int l, const Plan& p, ThreadPool* intra);
  void attention_mixer(Rank& r, int l, const Plan& p, ThreadPool* intra);
  void mlp(Rank& r, int l, const Plan& p, ThreadPool* intra);
  void moe_expert_parallel(Rank& r, int l, const Plan& p, ThreadPool* intra);
  void all_reduce(Rank& r, int l, int64_t rows, std::string_view op, std::string_view input);
  void record(const Rank& r, int l, std::string_view op, std::string_view component,
              std::initializer_list<std::string_view> inputs, OpShard shard, const float* data, int64_t n,
              int64_t offset = 0, int64_t size = 0) const;

  const HybridModel& m_;
  ThreadPool& pool_;
  HybridBatchOptions options_;
  std::vector<BatchSlot> slots_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  Collectives& comm() { return process_comm_ ? *process_comm_ : runner_->group(); }
  void gather_logits(Rank& r, int64_t n);

  int group_ranks_ = 1;                           // max(tp, ep); ranks_ holds the local ones
  std::unique_ptr<RankRunner> runner_;            // threads backend, group_ranks_ > 1
  std::unique_ptr<Collectives> process_comm_;     // mpi backend: this process is one rank
  std::vector<int> attention_index_;    // layer -> its index among the attention layers (-1: KDA)
  std::vector<float> logits_;           // [rows with want_logits, vocab]; each rank writes its slice
  size_t released_source_bytes_ = 0;
  OpTap* op_tap_ = nullptr;
  bool tap_rows_ = false;               // this forward records (op tap set, one row)
  const LayerObserver* observer_ = nullptr;
};

}  // namespace recur
