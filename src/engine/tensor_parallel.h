// Intra-node tensor parallelism: P ranks, each a pinned worker thread owning its shard of the
// weights, running the same forward pass (SPMD) and meeting at collectives.
//
// Sharding (Megatron-style): q/k/v, gate/up and the LM head are column-parallel (each rank owns
// a contiguous range of output rows: views into the file, no copy); the attention output and FFN
// down projections are row-parallel (each rank owns a range of input columns: copied once into
// rank-owned memory) and end in an all-reduce. Attention and KDA heads split across ranks; when
// there are more ranks than KV heads, ranks sharing a KV head each compute it.
//
// Collectives (shared memory, a Barrier per phase):
//   all_reduce_sum  every rank gets the sum of all partials, added in rank order 0, 1, ..., P-1,
//                   so every rank holds bit-identical results and a run is reproducible;
//   all-gather      the LM head: each rank writes its vocabulary slice of the shared logits.
// Thread-safety: one step at a time per group; each rank calls with its own index.
#pragma once

#include <memory>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/barrier.h"
#include "core/status.h"
#include "engine/weights.h"

namespace recur {

// Columns [c0, c1) of w, copied into owned storage (block-aligned for Q8_0).
struct OwnedWeight {
  Weight view;
  AlignedBuffer storage;
};
Result<std::unique_ptr<OwnedWeight>> weight_cols(const Weight& w, int64_t c0, int64_t c1);

// [begin, end) of `n` items for rank r of p, in units of `granule` (heads, Q8_0 blocks).
struct Span {
  int64_t begin = 0, end = 0;
  int64_t size() const { return end - begin; }
};
Span rank_span(int64_t n, int ranks, int rank, int64_t granule = 1);

class RankGroup {
 public:
  RankGroup(int ranks, int64_t max_elements);
  int ranks() const { return ranks_; }
  // Called by every rank with its partial[n]; returns with out[n] = partial_0 + ... + partial_{P-1}.
  void all_reduce_sum(int rank, const float* partial, float* out, int64_t n);
  void barrier() { barrier_.arrive_and_wait(); }

 private:
  int ranks_;
  Barrier barrier_;
  std::vector<std::vector<float>> slots_;
};

}  // namespace recur
