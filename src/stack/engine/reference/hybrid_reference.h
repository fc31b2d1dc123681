// A float64 forward pass of every architecture of the table (architectures.h) but MLA: the
// hybrid straight from hybrid.h's definition (the KDA recurrence through kernels/kda's float64
// reference), and the attention architectures from llama.cpp's graphs with each feature flag of
// model_config.h (biases, QK norm, NeoX / scaled RoPE, fused tensors, MoE routing and the
// shared expert's gate, the sliding window and gemma3's local RoPE), over weights of any storage type widened exactly to double. Slow on
// purpose (no tiling, no threads, a matrix product is a double loop); for small models, as the
// reference an arm is judged against: knob engine.numerics=f64_reference makes a session run
// it, and hybrid_test / architectures_test check the fp32 engine against it. One sequence;
// used by one thread at a time.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/model_config.h"

namespace recur {

class HybridReference {
 public:
  HybridReference(const gguf::File& file, const ModelConfig& config);
  // Appends `token` and returns the logits for the next one, in double.
  std::vector<double> step(int token);

 private:
  const std::vector<double>& tensor(const std::string& name);
  std::vector<double> mat(const std::string& name, const std::vector<double>& x, int rows, int64_t offset);
  std::vector<double> norm(const std::vector<double>& x, const std::string& name);
  void conv(std::vector<double>& x, const std::string& name, double* window);
  std::vector<double> kda(int l, const std::string& p, const std::vector<double>& h);
  std::vector<double> attention(int l, const std::string& p, const std::vector<double>& h);
  void norm_heads(std::vector<double>& x, const std::string& name);
  void rope(std::vector<double>& x, int layer);
  double activation(double g) const;
  // down(silu(gate x) * up x) for `width` hidden units; offsets pick a matrix (expert, fused half).
  std::vector<double> swiglu(const std::string& gate, const std::string& up, const std::string& down,
                             const std::vector<double>& h, int64_t offset_in, int64_t offset_out, int width);
  std::vector<double> mlp(const std::string& p, const std::vector<double>& h);

  const gguf::File& file_;
  ModelConfig c_;
  int pos_ = 0;
  std::map<std::string, std::vector<double>> tensors_;  // widened on first use
  std::vector<std::vector<double>> state_, window_;
  std::vector<std::vector<std::vector<double>>> keys_, values_;
};

// A Session over HybridReference: logits rounded to float at the end.
std::unique_ptr<Session> new_reference_session(const gguf::File& file, const ModelConfig& config, int max_tokens);

}  // namespace recur
