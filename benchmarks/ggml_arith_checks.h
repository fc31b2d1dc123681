// ggml_arith's functions against ggml's own ops, run through ggml graphs on libggml-cpu.so
// (ggml_graph_api.h), bit for bit: each check builds the graph llama.cpp builds, computes it on one
// thread and on two, and compares every output with the same computation composed of ggml_arith
// functions. Part of benchmarks/ggml_bits_check.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "ggml_graph_api.h"
#include "kernels/ggml_arith/ggml_arith.h"

namespace recur::ggml_graph {

// One op's comparison over all its shapes and thread counts.
class Tally {
 public:
  explicit Tally(std::string op) : op_(std::move(op)) {}
  // Bitwise comparison of ggml's outputs with recur's; `where` names the case for the first
  // difference. An empty `ggml` (the graph failed) counts every output as differing.
  void compare(const std::vector<float>& ggml, const std::vector<float>& mine, const std::string& where);
  // Prints "<op>: D of N outputs differ" (and the first difference); true when none differ.
  bool report() const;

 private:
  std::string op_;
  int64_t differ_ = 0, total_ = 0;
  std::string first_;
};

// The thread counts every graph runs with.
inline constexpr int kThreadCounts[] = {1, 2};
// Context memory for one graph: its tensors and ggml's work buffer.
inline constexpr size_t kScratchBytes = size_t(256) << 20;

std::vector<float> random_floats(std::mt19937_64& rng, size_t n, float scale);
std::vector<uint16_t> to_fp16(const std::vector<float>& x);

// Each returns true when every output of its ops matched.
bool check_rms_norm(const Api& api, std::mt19937_64& rng);
bool check_rope(const Api& api, std::mt19937_64& rng);
bool check_unary(const Api& api, ggml_arith::GgmlIsa isa, std::mt19937_64& rng);  // silu, sigmoid
bool check_soft_max(const Api& api, ggml_arith::GgmlIsa isa, std::mt19937_64& rng);
bool check_mul_mat(const Api& api, ggml_arith::GgmlIsa isa, std::mt19937_64& rng);
bool check_attention(const Api& api, ggml_arith::GgmlIsa isa, std::mt19937_64& rng);

}  // namespace recur::ggml_graph
