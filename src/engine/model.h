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
#include "engine/gguf.h"
#include "engine/model_config.h"
#include "engine/op_tap.h"
#include "engine/tokenizer.h"

namespace recur {

class ThreadPool;

class Session {
 public:
  virtual ~Session() = default;
  // Appends `token` at the next position and returns the logits for the token after it.
  virtual Result<std::span<const float>> step(TokenId token) = 0;
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

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelConfig& config() const = 0;
  virtual const Tokenizer& tokenizer() const = 0;
  // Weight bytes one decode step streams: every weight except the embedding table (one row is
  // read), which counts once as the LM head when tied; MoE experts scaled by top-k / experts.
  virtual uint64_t weight_bytes_per_token() const = 0;
  // A fresh sequence of at most max_tokens tokens; knobs choose kernel variants.
  virtual Result<std::unique_ptr<Session>> new_session(ThreadPool& pool, int max_tokens,
                                                       const Config& knobs) const = 0;
};

// The rule of Model::weight_bytes_per_token over a GGUF file.
uint64_t decode_weight_bytes(const gguf::File& file, const ModelConfig& config);

// Reads general.architecture and loads a llama or hybrid model.
Result<std::unique_ptr<Model>> load_model(const std::string& path);
Result<std::unique_ptr<Model>> model_from_file(gguf::File file);

}  // namespace recur
