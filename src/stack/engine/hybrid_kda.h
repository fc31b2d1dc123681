// One sequence's state in one KDA layer on one rank (hybrid.h's KDA layer): the short
// convolution windows of q, k and v, and the recurrent state [HV, K, V] of the rank's value
// heads, either plain (kernels/kda decode and prefill update it in place) or held by ReplaySSM
// (knob engine.kda.replay=on: a checkpoint plus the last `window` steps' keys, cumulative
// decays and deltas; kda::replay_step computes a decode step from them and folds the buffer
// into the checkpoint every `window` steps, docs/kda.md).
//
// A run of T tokens of the sequence: T = 1 is a decode step (kda::decode or kda::replay_step);
// T > 1 is kda::prefill with the configured variant (with ReplaySSM the state is materialized,
// prefilled and becomes the new checkpoint). Used by one thread at a time.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/engine_options.h"
#include "engine/rank_weights.h"
#include "kernels/kda/kda.h"
#include "kernels/kda/kda_replay.h"

namespace recur::hybrid {

// The q, k, v, g (raw gate) and b (beta logits) rows of T consecutive tokens of one sequence,
// as the projections wrote them ([T, HK*K], [T, HK*K], [T, HV*V], [T, HV*K], [T, HV]).
struct KdaRows {
  float *q, *k, *v;
  const float *g, *b;
  int64_t tokens;
};

class KdaSequenceState {
 public:
  static Result<KdaSequenceState> create(const LayerShard& shard, int64_t head_dim, int conv_size,
                                         const KdaOptions& options);
  // An empty sequence: zero state, zero windows.
  void reset();
  // Convolves rows.q/k/v in place (then SiLU) and runs the recurrence over the rows' tokens,
  // writing out [T, HV*V]. scratch: a rank-owned buffer for a ReplaySSM prefill.
  Status run(const LayerShard& shard, const KdaRows& rows, float* out, ThreadPool* pool, kda::Workspace& ws,
             std::vector<float>& scratch);
  // The convolution windows and the plain state (empty with ReplaySSM), for sequence_state.h.
  std::span<float> conv_window() { return window_; }
  std::span<float> plain_state() { return state_; }

 private:
  KdaSequenceState() = default;
  void convolve(const std::vector<float>& weights, float* x, int64_t channels, int64_t tokens, float* window,
                int64_t c0, int64_t c1) const;
  void convolve_all(const LayerShard& shard, const KdaRows& rows, ThreadPool* pool);

  KdaOptions options_;
  kda::Shape shape_;             // one sequence of the rank's heads; tokens set per run
  int conv_size_ = 1;
  std::vector<float> window_;    // [q | k | v channels][conv_size - 1], oldest first
  std::vector<float> state_;     // plain state; empty with ReplaySSM
  std::optional<kda::ReplayCache> replay_;
};

}  // namespace recur::hybrid
