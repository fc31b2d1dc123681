// MoE expert parallelism (docs/engine.md, "Expert parallelism"), in the manner of DeepEP's
// dispatch/combine: the experts of a layer are split across EP ranks, each rank owning whole
// experts (rank r: experts ep_experts(E, P, r)), and every token is owned by one rank (the
// caller's rows). For each MoE layer, collectively on every rank:
//   dispatch  each (token, expert) pair of the token's top-k goes, as a row (token index,
//             expert, hidden state), to the rank holding that expert: an all_to_all_v of rows
//             through Collectives (collectives.h), a real exchange on either backend;
//   experts   each rank runs each of its experts once over the rows it received for it, in
//             arrival order (source rank, then token) -- the order EP=1 groups them in;
//   combine   the expert outputs go back the same way (the reverse all_to_all_v), and the
//             owner reduces them with the routing weights: y = 0, then y = y + w_e * out_e for
//             the token's experts in ascending expert index, exactly the EP=1 loop's order.
// So EP=1 and EP=P give the same bits when the owners' rows are contiguous runs of the batch
// in rank order (each expert then sees the same rows in the same order).
//
// Dispatch modes (knob engine.ep.dispatch_mode):
//   normal       two rounds: per-peer row counts (a fixed 8-byte all_to_all), then the rows
//                (all_to_all_v of exactly the rows needed); combine needs no counts round.
//   low_latency  one fixed-size all_to_all each way and no counts round: every peer block has
//                room for capacity = max_rows_per_rank * min(top_k, experts per rank) rows plus
//                an 8-byte row count, padded. For decode (a few rows per rank) the padding is
//                small and one round-trip (a network latency across hosts) is saved; for long
//                prefills the padding dominates, so normal is the default.
// Both are traced zones: moe.dispatch and moe.combine with args tokens (rows sent) and bytes.
// Thread-safety: one call per rank at a time; EpWorkspace is per rank.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/status.h"
#include "engine/collectives.h"
#include "engine/tensor_parallel.h"

namespace recur::moe {

enum class DispatchMode : uint8_t { kNormal, kLowLatency };

struct EpOptions {
  int ep = 1;  // knob engine.ep: 1, 2, 4 or 8
  DispatchMode mode = DispatchMode::kNormal;
};

// Experts [begin, end) held by EP rank `rank` of `ep` (E divisible by ep: whole experts).
Span ep_experts(int n_experts, int ep, int rank);

// The MoE layer one rank runs: its place in the group and the layer's shape.
struct EpLayer {
  Collectives* comm = nullptr;
  int rank = 0;
  int n_experts = 0, top_k = 0;
  int64_t dim = 0;
  DispatchMode mode = DispatchMode::kNormal;
  int64_t max_rows_per_rank = 0;  // low_latency capacity: the most rows any rank owns
};

// Runs expert `expert` (one of this rank's) over x[m, dim] into y[m, dim].
using ExpertFn = std::function<void(int expert, const float* x, int64_t m, float* y)>;

// Per-rank buffers, grown as needed and reused across layers and steps.
struct EpWorkspace {
  std::vector<std::byte> send, recv;
  std::vector<float> x, y;
  std::vector<int64_t> send_bytes, recv_bytes, send_rows, recv_rows;
};

// For this rank's `rows` tokens h[rows, dim], each routed to the experts ids[rows, top_k] with
// the weights weights[rows, top_k] (any order within a row): y[rows, dim] = the routed experts'
// outputs reduced with their weights (the shared expert is the caller's). Collective: every
// rank of L.comm calls it, rows may be 0.
void ep_moe_forward(const EpLayer& L, const float* h, const int32_t* ids, const float* weights, int64_t rows,
                    const ExpertFn& expert, EpWorkspace& ws, float* y);

}  // namespace recur::moe
