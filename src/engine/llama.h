// The llama architecture as GGUF defines it (what llama.cpp runs), forward pass in fp32 over
// weights in their stored type. It reads top to bottom like llama2.c: embed, then per layer
// RMSNorm -> GQA attention with RoPE (interleaved pairs, GGUF's layout) -> residual ->
// RMSNorm -> SwiGLU -> residual; final RMSNorm and the LM head.
//
// A LlamaModel is immutable after load and may be shared; a LlamaSession holds one sequence's
// KV cache and scratch and is used by one thread at a time (it uses the pool it is given).
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/status.h"
#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/tensor_parallel.h"
#include "engine/model_config.h"
#include "engine/tokenizer.h"
#include "engine/weights.h"

namespace recur {

class ThreadPool;
class RankRunner;
enum class ReduceDtype : uint8_t;

struct LlamaLayerWeights {
  Weight attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down;
};

// One rank's shard of a layer: column shards of q/k/v/gate/up (its heads, KV heads, FFN columns)
// and row-parallel shards of o and down (tensor_parallel.h); whole matrices with one rank.
struct LlamaLayerShard {
  Weight wq, wk, wv, w_gate, w_up;
  std::unique_ptr<OwnedWeight> wo, w_down;
};
Result<LlamaLayerShard> shard_llama_layer(const LlamaLayerWeights& L, Span heads, Span kv_heads, Span ffn,
                                          int head_dim, int ranks);
class LlamaModel;
// After all ranks' shards are built (tp > 1): releases the resident file pages of every layer's
// o and down projections, which the ranks now hold as copies (release_copied_sources).
Result<size_t> release_llama_row_parallel_sources(const LlamaModel& m);

class LlamaModel final : public Model {
 public:
  // Loads a GGUF file of architecture llama: config, tokenizer and every tensor, checked.
  static Result<std::unique_ptr<LlamaModel>> load(const std::string& path);
  // Binds an already parsed file (the File must outlive the model's use of the bytes),
  // regrouping Q8_0 / F16 matrices as `options` say.
  static Result<std::unique_ptr<LlamaModel>> from_file(gguf::File file, const ModelLoadOptions& options = {});

  const ModelConfig& config() const override { return config_; }
  const Tokenizer& tokenizer() const override { return *tokenizer_; }
  Result<std::unique_ptr<Session>> new_session(ThreadPool& pool, int max_tokens, const Config& knobs) const override;
  // Batched forward over a paged KV cache (llama_batch.h); knobs engine.tp, engine.tp.reduce_dtype,
  // engine.kv_dtype.layer[N].
  Result<std::unique_ptr<Batch>> new_batch(ThreadPool& pool, const BatchOptions& options,
                                           const Config& knobs) const override;
  uint64_t weight_bytes_per_token() const override { return decode_weight_bytes(file_, config_); }
  const gguf::File& file() const { return file_; }

  Weight token_embedding, output_norm, output;
  std::vector<LlamaLayerWeights> layers;

 private:
  // Regroups every Q8_0 / F16 matrix (as `options` say) but the token embedding into
  // regrouped_, releasing each source's file pages once its copy exists (the peak is the model
  // plus one matrix).
  Status regroup_weights(const ModelLoadOptions& options);

  gguf::File file_;
  AlignedBuffer regrouped_;
  ModelConfig config_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

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
