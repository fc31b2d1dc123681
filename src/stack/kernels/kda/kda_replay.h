// ReplaySSM: KDA decode that trades compute for state memory traffic (docs/kda.md).
//
// Per sequence the cache keeps a checkpoint state S0 and, for the steps since it, the
// normalized key k_j, the delta v'_j = beta_j (v_j - ...) and the cumulative log-decay
// G_j = g_1 + ... + g_j since the checkpoint. A step reads S0 (never writes it) and the
// buffered steps, and gets S_t^T k and S_t^T q from
//   S_t = diag(exp G_t) S0 + sum_j diag(exp(G_t - G_j)) k_j v'_j^T
// without forming S_t. Every `window` (L, default 16) steps the buffer is folded into S0
// ("flush"), so the state is written once per L tokens instead of every token.
//
// Speculative verify: replay_step with shape.tokens = T drafts runs them against checkpoint
// plus buffer and appends T entries; rollback(seq, r) drops the last r of them by moving the
// cursor only. A sequence whose buffer cannot take T more entries is flushed first, so a
// window of up to L drafts always fits and rollback never needs an older state.
// The buffer has two halves of L slots: entries since the checkpoint live in one half, and a
// flush switches halves, so a step that flushes can read the old entries while writing new.
//
// Thread-safety: a cache is used by one call at a time.
#pragma once

#include <cstdint>
#include <vector>

#include "core/aligned_buffer.h"
#include "kernels/kda/kda.h"

namespace recur::kda {

class ReplayCache {
 public:
  // shape.batch sequences of shape.hv heads (shape.tokens is ignored); 1 <= window <= 1024.
  static Result<ReplayCache> create(const Shape& shape, StateLayout layout, int window = 16);

  // Every sequence's checkpoint becomes `state` ([B, HV, K, V] or [B, HV, V, K]); buffers empty.
  void reset(const float* state);
  // Drops the last `steps` buffered steps of `seq`; fails past the checkpoint.
  Status rollback(int64_t seq, int steps);
  // The current state S_t of every sequence (checkpoint plus buffer, accumulated in double),
  // in the cache's layout. Does not change the cache.
  void materialize(float* out) const;

  int window() const { return window_; }
  int count(int64_t seq) const { return count_[size_t(seq)]; }
  int64_t flushes() const { return flushes_; }  // checkpoint writes (one per sequence flush)
  const Shape& shape() const { return shape_; }
  StateLayout layout() const { return layout_; }

  // Storage, for replay_step: the checkpoint of head (b * HV + h) and slot s of its buffer
  // (s in [0, 2 * window)).
  float* checkpoint(int64_t head) { return ckpt_.as<float>().data() + head * shape_.k * shape_.v; }
  float* key(int64_t head, int s) { return k_.as<float>().data() + (head * 2 * window_ + s) * shape_.k; }
  float* cum_decay(int64_t head, int s) { return g_.as<float>().data() + (head * 2 * window_ + s) * shape_.k; }
  float* delta(int64_t head, int s) { return v_.as<float>().data() + (head * 2 * window_ + s) * shape_.v; }
  int half(int64_t seq) const { return half_[size_t(seq)]; }
  // Records a step of T entries for seq, flushed first or not.
  void advance(int64_t seq, int tokens, bool flushed);

 private:
  ReplayCache() = default;
  Shape shape_;
  StateLayout layout_ = StateLayout::kKV;
  int window_ = 16;
  AlignedBuffer ckpt_, k_, g_, v_;
  std::vector<int> count_, half_;
  int64_t flushes_ = 0;
};

// One ReplaySSM step of shape.tokens (T <= window) tokens per sequence: T = 1 is decode,
// T > 1 a speculative verify window. Writes out [B, T, HV, V]. params.layout must be the
// cache's; the variant chooses the prologue as for decode().
Status replay_step(ReplayCache& cache, const Shape& shape, const Params& params,
                   const Inputs& in, float* out, DecodeVariant variant, ThreadPool* pool,
                   Workspace& ws);

}  // namespace recur::kda
