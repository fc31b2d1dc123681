// Forward: the one batched forward pass of every architecture (transformer.h), over a flat list
// of tokens of several sequences (model.h's Batch contract). One forward():
//   - groups the tokens by sequence (each sequence's tokens keep their order; sequences are
//     independent, so the rows may be reordered), giving one run of rows per sequence;
//   - per layer (forward.cc, rank_forward: the whole step in one sitting): RMSNorm, the token
//     mixer (attention over a paged KV cache, or KDA with per-sequence states), the all-reduce,
//     the residual, RMSNorm, the FFN (dense SwiGLU or MoE), the all-reduce, the residual;
//     each block in its own file under engine/blocks/; every projection runs once for all rows
//     (each weight is streamed once per forward);
//   - the LM head only for rows with want_logits.
// Tensor parallelism (engine.tp): every rank runs the same forward on its shards
// (rank_weights.h) with its own KV cache of its KV heads and KDA states of its value heads;
// all-reduces carry all rows at once.
// Layer split (engine.layer_split=on, tp > 1): each attention layer is whole on one owner rank
// (the i-th attention layer on rank i mod tp), which alone holds its KV and computes it; the
// other ranks contribute zeros to the layer's all-reduce. KDA layers and the FFN stay split.
// Expert parallelism (engine.ep, moe_ep.h): max(tp, ep) ranks; each MoE layer's experts are
// split whole across them (with tp = 1 the ranks replicate the mixers).
// Collectives (engine.collectives): threads runs every rank here on pinned threads; mpi runs one
// rank per process under mpirun (this process's rank only; every process returns all logits).
// Op taps (op_table.h) and the layer observer see single-row forwards only (a session's step).
//
// Errors (unknown sequence, token outside the vocabulary, more than max_batch_tokens, a
// sequence past max_tokens, the KV pages exhausted) are found before anything changes, so they
// leave every sequence as it was. Thread-safety: one call at a time; it runs on the pool it was
// given (or on its rank threads).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/batch_plan.h"
#include "engine/engine_options.h"
#include "engine/model.h"
#include "engine/op_table.h"
#include "engine/transformer.h"

namespace recur {

struct ForwardRank;  // blocks/block.h
struct Step;

class Forward final : public Batch {
 public:
  static Result<std::unique_ptr<Forward>> create(const TransformerModel& m, ThreadPool& pool,
                                                 const BatchOptions& batch, const EngineOptions& options);
  ~Forward() override;

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

  const BatchOptions& options() const { return batch_; }
  // Bytes of file pages released after sharding: the row-parallel sources every local rank
  // copied (tp > 1; 0 otherwise or for weights not in a file map). docs/engine.md, TP memory.
  size_t released_source_bytes() const { return released_source_bytes_; }
  // Observers of single-row forwards (model.h's Session::set_op_tap / set_layer_observer).
  void set_op_tap(OpTap* tap) { op_tap_ = tap; }
  using LayerObserver = std::function<void(int layer, std::span<const float> residual)>;
  void set_layer_observer(const LayerObserver* f) { observer_ = f; }

 private:
  Forward(const TransformerModel& m, ThreadPool& pool, const BatchOptions& batch, const EngineOptions& options);
  Status add_rank(int index);  // forward_ranks.cc
  Result<BatchPlan> plan(std::span<const BatchToken> tokens) const;
  // The pool that KV admission is checked against (every rank's has the same pages); null
  // without attention layers.
  const kernels::attention::PagedKvCache* admission_kv() const;
  void rank_forward(ForwardRank& r, const BatchPlan& p);
  void all_reduce(const Step& s, int l, Op op);
  Collectives* comm();

  const TransformerModel& m_;
  ThreadPool& pool_;
  BatchOptions batch_;
  EngineOptions options_;
  std::string who_;                     // "llama batch", "hybrid batch": errors start with it
  std::vector<BatchSlot> slots_;
  std::vector<std::unique_ptr<ForwardRank>> ranks_;
  int group_ranks_ = 1;                 // max(tp, ep); ranks_ holds the local ones
  std::unique_ptr<RankRunner> runner_;  // threads backend, group_ranks_ > 1
  std::unique_ptr<Collectives> process_comm_;  // mpi backend: this process is one rank
  std::vector<int> attention_index_;    // layer -> its index among the attention layers (-1: KDA)
  std::vector<float> logits_;           // [rows with want_logits, vocab]; each rank writes its slice
  size_t released_source_bytes_ = 0;
  OpTap* op_tap_ = nullptr;
  const LayerObserver* observer_ = nullptr;
};

}  // namespace recur
