// Model and Session: what generation, benchmarks and the server see of any architecture.
//
// A Model is immutable after load and may be shared by threads. A Session holds one sequence's
// state (KV cache, KDA states, convolution windows) and is used by one thread at a time; it
// runs its work on the pool it was given.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>

#include "core/knobs.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "engine/engine_options.h"
#include "engine/gguf.h"
#include "engine/model_config.h"
#include "engine/op_tap.h"
#include "engine/tokenizer.h"

namespace recur {

class ThreadPool;
struct SequenceStateParts;  // sequence_state.h

class Session {
 public:
  virtual ~Session() = default;
  // Appends `token` at the next position and returns the logits for the token after it.
  virtual Result<std::span<const float>> step(TokenId token) = 0;
  // Appends the tokens (a prompt, or a chunk of one) in one batched forward and returns the
  // logits for the token after the last. Equals step() over each token up to float rounding.
  // The base version steps token by token; architectures override it with a batched forward.
  virtual Result<std::span<const float>> prefill(std::span<const TokenId> tokens);
  virtual int position() const = 0;
  // Called after every layer with the residual stream (activation statistics, tests).
  void set_layer_observer(std::function<void(int layer, std::span<const float> residual)> f) { observer_ = std::move(f); }
  // Receives every named op's output (op_tap.h) until reset to null; the tap must outlive the
  // steps it observes. Architectures without op taps ignore it (llama so far).
  void set_op_tap(OpTap* tap) { op_tap_ = tap; }

 protected:
  std::function<void(int, std::span<const float>)> observer_;
  OpTap* op_tap_ = nullptr;
};

using SeqId = int32_t;

// One token of one sequence in a forward batch.
struct BatchToken {
  SeqId seq = 0;
  TokenId token = 0;
  bool want_logits = false;  // return the logits for the token after this one
  // Non-null: the model's hidden-size row that enters the forward at this position instead of
  // the token's embedding (an image patch from the vision encoder); the caller keeps it alive
  // through forward(). `token` is then still checked against the vocabulary but not looked up.
  const float* embedding = nullptr;
};

struct BatchOptions {
  int max_sequences = 1;       // live sequences at once
  int max_tokens = 2048;       // per sequence (KV pages are allocated as sequences grow)
  int max_batch_tokens = 512;  // tokens per forward()
};

// KV-cache occupancy of a Batch (pages of the paged attention cache; 0/0 without attention).
struct KvUsage {
  int64_t pages_used = 0;
  int64_t pages_total = 0;
  int64_t bytes_total = 0;
};

// Several sequences of different lengths advanced together. One forward() streams every weight
// once for all the tokens it is given: batched decode (one token per sequence), prefill (a run
// of one sequence's prompt), or both mixed, as a continuous-batching scheduler builds them.
// Attention K/V lives in a paged cache (kernels/attention PagedKvCache, dtype per layer from the
// knobs), KDA state per sequence. Used by one thread at a time; it runs on the pool it was given.
class Batch {
 public:
  virtual ~Batch() = default;
  // A new, empty sequence; an error when max_sequences are live.
  virtual Result<SeqId> add_sequence() = 0;
  // Releases the sequence's KV pages and state; its id may be reused by a later add_sequence().
  virtual Status free_sequence(SeqId seq) = 0;
  // Tokens the sequence holds.
  virtual int position(SeqId seq) const = 0;
  // Appends each token at its sequence's next position (a sequence's tokens in the order
  // given) and returns, concatenated in the same order, vocab-size logit rows for the tokens
  // with want_logits. Errors (unknown sequence, more than max_batch_tokens, a sequence past
  // max_tokens, the KV pool exhausted) leave every sequence as it was before the call.
  virtual Result<std::span<const float>> forward(std::span<const BatchToken> tokens) = 0;
  virtual KvUsage kv_usage() const = 0;

  // Disaggregated serving (sequence_state.h exports and imports through this): where the live
  // sequence's per-layer state lives. Unsupported by default; architectures refuse TP > 1.
  virtual Status state_parts(SeqId seq, SequenceStateParts& out);
  // Called on the forward's thread after each layer of every forward() (layer-wise KV transfer:
  // layer l's state is final for this forward when hook(l) runs); null to stop.
  void set_layer_hook(std::function<void(int layer)> hook) { layer_hook_ = std::move(hook); }

 protected:
  std::function<void(int layer)> layer_hook_;
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  virtual const Tokenizer& tokenizer() const = 0;
  // Weight bytes one decode step streams: every weight except the embedding table (one row is
  // read), which counts once as the LM head when tied; MoE experts scaled by top-k / experts.
  virtual uint64_t weight_bytes_per_token() const = 0;
  // A fresh sequence of at most max_tokens tokens, run as the options say (engine_options.h).
  virtual Result<std::unique_ptr<Session>> new_session(ThreadPool& pool, int max_tokens,
                                                       const EngineOptions& options) const = 0;
  // Sequences decoded together (continuous batching, batched prefill); options as new_session.
  virtual Result<std::unique_ptr<Batch>> new_batch(ThreadPool& pool, const BatchOptions& batch,
                                                   const EngineOptions& options) const;
  // The same with the options the knobs give for this model (engine_options_from).
  Result<std::unique_ptr<Session>> new_session(ThreadPool& pool, int max_tokens, const Config& knobs) const;
  Result<std::unique_ptr<Batch>> new_batch(ThreadPool& pool, const BatchOptions& batch, const Config& knobs) const;
};

// The rule of Model::weight_bytes_per_token over a GGUF file.
uint64_t decode_weight_bytes(const gguf::File& file, const ModelConfig& config);

// The conditions a probe ran the engine (or a kernel) under, for its Feedback: "probe conditions:
// 2 threads, pinned, polling 200 us before sleeping (engine.pool_spin_us), ISA avx512 (core.isa)".
// Kernel probes and engine probes that disagree on these measure different things.
std::string probe_conditions_note(const ThreadPool& pool, const ThreadPoolOptions& options);

// Reads general.architecture and loads the model by its row of the architecture table
// (architectures.h; any other is refused naming the supported ones), its bytes held as the knob
// engine.weights_memory says (mmap: the file mapped; anon: read into huge-page anonymous memory).
// A directory holding config.json is a Hugging Face checkpoint (hf_checkpoint.h).
Result<std::unique_ptr<Model>> load_model(const std::string& path, const Config& knobs);
// The model at `path` as a GGUF File without loading it: the file, or a Hugging Face directory
// assembled in llama.cpp's layout (hf_checkpoint.h). For readers of metadata and tokenizers.
Result<gguf::File> read_model_file(const std::string& path, FileMemory memory = FileMemory::kMap);
Result<std::unique_ptr<Model>> load_model(const std::string& path);  // the knobs' defaults (anon)

// Several models over one file's bytes (a gate's arms that differ only in how the weights are
// prepared, e.g. engine.weight_layout): read the bytes once as engine.weights_memory says, then
// load each model over them. The models never release the shared pages (a sibling may read
// them in place). Each load emits a trace zone "load_model" whose args name what it did:
// memory (anon|mmap, after any fallback) and the regroup options.
// How the knob engine.weights_memory asks for the bytes to be held (before any fallback).
Result<FileMemory> weights_file_memory(const Config& knobs);
Result<std::shared_ptr<const MappedFile>> read_model_bytes(const std::string& path, const Config& knobs);
Result<std::unique_ptr<Model>> load_model_over(const MappedFile& bytes, const Config& knobs);
Result<std::unique_ptr<Model>> model_from_file(gguf::File file, const ModelLoadOptions& options = {});

}  // namespace recur
