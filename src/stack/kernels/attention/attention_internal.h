// Helpers shared by the decode and prefill drivers (attention_decode.cc, attention_prefill.cc).
#pragma once

#include <cmath>
#include <limits>
#include <vector>

#include "kernels/attention/attention.h"
#include "kernels/attention/attention_ops.h"

namespace recur::kernels::attention::internal {

// The attend() path for options.isa (kUnsupported when above active_isa()).
Result<AttendFn> attend_for(const AttentionOptions& options);

inline float softmax_scale(const AttentionOptions& o, int head_dim) {
  return o.scale != 0 ? o.scale : 1.0f / std::sqrt(float(head_dim));
}

// The running state of `rows` rows of attend(), reset to empty.
struct RowState {
  std::vector<float> m, l, acc;
  void reset(int rows, int head_dim) {
    m.assign(size_t(rows), -std::numeric_limits<float>::infinity());
    l.assign(size_t(rows), 0.0f);
    acc.assign(size_t(rows) * size_t(head_dim), 0.0f);
  }
};

// A thread's scratch for attend() (slot 0) and its rounded path's weights (slot 1), grown on demand.
float* scratch(int64_t floats, int slot = 0);

// Whether the options round q and the softmax weights on a layer of type t (AttentionOperands).
inline bool rounds_operands(const AttentionOptions& o, KvDType t) {
  return o.operands == AttentionOperands::kCacheType && (t == KvDType::kF16 || t == KvDType::kBF16);
}

// Whether options.ggml runs a layer of type t (f16 and f32: attention_ggml.cc).
bool uses_ggml(const AttentionOptions& o, KvDType t);

// options.ggml's attention of tokens[i] query rows per sequence (q and out [sum tokens, q_heads,
// head_dim]), whose K and V the cache already holds at its last tokens[i] positions.
Status ggml_attention(const PagedKvCache& cache, int layer, std::span<const int> seqs, std::span<const int64_t> tokens,
                      const float* q, int q_heads, float* out, const AttentionOptions& o, ThreadPool* pool);

}  // namespace recur::kernels::attention::internal
