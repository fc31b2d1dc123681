// The sequential llama reference: one sequence, one row per step, a flat fp32 KV cache and
// attention_decode (layers.h), read top to bottom like llama2.c; with tp > 1 its ranks run on a
// pinned pool of their own (tensor_parallel.h). Not what generate or serve run (they run the one
// batched forward, forward.h): it is what the batch tests and the TP tests compare against.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "engine/llama.h"
#include "engine/tensor_parallel.h"

namespace recur {

class RankRunner;
enum class ReduceDtype : uint8_t;

// One rank's shard of a layer: column shards of q/k/v/gate/up (its heads, KV heads, FFN columns)
// and row-parallel shards of o and down (tensor_parallel.h); whole matrices with one rank.
struct LlamaLayerShard {
  Weight wq, wk, wv, w_gate, w_up;
  std::unique_ptr<OwnedWeight> wo, w_down;
};
Result<LlamaLayerShard> shard_llama_layer(const LayerWeights& L, Span heads, Span kv_heads, Span ffn,
                                          int head_dim, int ranks);
// After all ranks' shards are built (tp > 1): releases the resident file pages of every layer's
// o and down projections, which the ranks now hold as copies (release_copied_sources).
Result<size_t> release_llama_row_parallel_sources(const LlamaModel& m);

// One sequence. With tp == 1 a single rank spreads each matrix product over `pool`; with
// tp > 1 the session runs tp ranks on a pinned pool of its own (tensor_parallel.h).
class LlamaSession final : public Session {
 public:
  static Result<std::unique_ptr<LlamaSession>> create(const LlamaModel& model, ThreadPool& pool, int max_tokens,
                                                      int tp = 1, ReduceDtype reduce = {});
  ~LlamaSession() override;

  // Appends `token` at the next position and returns the logits for the token after it.
  Result<std::span<const float>> step(TokenId token) override;
  int position() const override { return pos_; }
  int tp() const;
  // Bytes of file pages released after sharding (0 with one rank or weights not from a file).
  size_t released_source_bytes() const { return released_source_bytes_; }

 private:
  struct Rank;
  LlamaSession(const LlamaModel& model, ThreadPool& pool, int max_tokens);
  void rank_step(Rank& r, TokenId token);
  void all_reduce(Rank& r, int n);  // traced; a no-op for one rank

  const LlamaModel& model_;
  ThreadPool& pool_;
  int max_tokens_;
  int pos_ = 0;
  size_t released_source_bytes_ = 0;
  std::vector<std::unique_ptr<Rank>> ranks_;
  std::unique_ptr<RankRunner> runner_;  // tp > 1
  std::vector<float> logits_;  // all-gathered: each rank writes its vocabulary slice
};

}  // namespace recur
