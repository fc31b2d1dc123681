// LlamaBatch: the llama forward pass (llama.h) over a flat list of tokens of several sequences
// (model.h's Batch contract). One forward():
//   - groups the tokens by sequence (a sequence's tokens keep their order), one run of rows each;
//   - runs every projection once for all M rows (matmul with m = M: each weight is streamed once
//     per forward), RMSNorm, RoPE (at each row's own position) and residuals per row;
//   - attention over a paged KV cache (kernels/attention PagedKvCache, pages of 16 tokens, one
//     page table per sequence, element type per layer from engine.kv_dtype.layer[N]): a forward
//     of one-token runs appends and runs the paged decode kernel, otherwise the paged prefill
//     kernel (causal within each run);
//   - the LM head only for rows with want_logits.
// Tensor parallelism (engine.tp): every rank runs the same forward on its column/row shards
// with its own KV cache of its KV heads; the all-reduces carry all M rows at once.
// Errors (unknown sequence, token outside the vocabulary, more than max_batch_tokens, a sequence
// past max_tokens, the KV pages exhausted) are found before anything changes.
// Thread-safety: one call at a time; it runs on the pool it was given (or on its rank threads).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "engine/llama.h"
#include "engine/batch_plan.h"
#include "engine/model.h"
#include "engine/tensor_parallel.h"
#include "kernels/attention/kv_cache.h"

namespace recur {

struct LlamaBatchOptions {
  BatchOptions batch;
  int tp = 1;
  ReduceDtype reduce = ReduceDtype::kF32;
  gemm::Activations act = kDefaultActivations;
  std::vector<kernels::attention::KvDType> kv_dtypes;  // one per layer
};

// Reads engine.tp, engine.tp.reduce_dtype, kernel.gemm.q8_0_activations,
// kernel.gemm.f16_activations and engine.kv_dtype.layer[N] for every layer.
Result<LlamaBatchOptions> llama_batch_options(const Config& knobs, const ModelConfig& c, const BatchOptions& batch);

class LlamaBatch final : public Batch {
 public:
  static Result<std::unique_ptr<LlamaBatch>> create(const LlamaModel& m, ThreadPool& pool,
                                                    const LlamaBatchOptions& options);
  ~LlamaBatch() override;

  Result<SeqId> add_sequence() override;
  Status free_sequence(SeqId seq) override;
  int position(SeqId seq) const override;
  Result<std::span<const float>> forward(std::span<const BatchToken> tokens) override;
  KvUsage kv_usage() const override;
  Status state_parts(SeqId seq, SequenceStateParts& out) override;  // sequence_state.h; tp = 1 only
  const BatchOptions& options() const { return options_.batch; }
  // Called after every layer of a one-row forward with the residual (Session's observer).
  void set_layer_observer(const std::function<void(int, std::span<const float>)>* f) { observer_ = f; }
  // Bytes of file pages released after sharding (0 with one rank or weights not from a file).
  size_t released_source_bytes() const { return released_source_bytes_; }

 private:
  struct Rank;
  using Plan = BatchPlan;
  LlamaBatch(const LlamaModel& m, ThreadPool& pool, const LlamaBatchOptions& options);
  Result<Plan> plan(std::span<const BatchToken> tokens) const;
  void rank_forward(Rank& r, const Plan& p);
  void attention(Rank& r, int l, const Plan& p, ThreadPool* intra);
  void all_reduce(Rank& r, int64_t rows);

  const LlamaModel& m_;
  ThreadPool& pool_;
  LlamaBatchOptions options_;
  std::vector<BatchSlot> slots_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::unique_ptr<RankRunner> runner_;  // tp > 1
  size_t released_source_bytes_ = 0;
  std::vector<float> logits_;
  const std::function<void(int, std::span<const float>)>* observer_ = nullptr;
};

// A session is a batch of one sequence: step() is a forward of one row, prefill() of one run
// (chunks of max_batch_tokens rows). While a layer observer is set, prefill steps token by token.
Result<std::unique_ptr<Session>> new_llama_batch_session(const LlamaModel& m, ThreadPool& pool, int max_tokens,
                                                         const Config& knobs);

}  // namespace recur
