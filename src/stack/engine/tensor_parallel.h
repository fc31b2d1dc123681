// Intra-node tensor parallelism: P ranks, each a pinned worker thread owning its shard of the
// weights, running the same forward pass (SPMD) and meeting at collectives.
//
// Sharding (Megatron-style): q/k/v, gate/up and the LM head are column-parallel (each rank owns
// a contiguous range of output rows: views into the file, no copy); the attention output and FFN
// down projections are row-parallel (each rank owns a range of input columns: copied once into
// rank-owned memory) and end in an all-reduce. Attention and KDA heads split across ranks; when
// there are more ranks than KV heads, ranks sharing a KV head each compute it.
//
// Collectives (collectives.h; RankGroup is the threads backend: shared memory, a Barrier per
// phase):
//   all_reduce_sum  every rank gets the sum of all partials, added in rank order 0, 1, ..., P-1,
//                   so every rank holds bit-identical results and a run is reproducible; with
//                   knob engine.tp.reduce_dtype=bf16 each partial is rounded to bf16 before the
//                   sum and the sum is rounded to bf16 (what a bf16 NCCL all-reduce delivers);
//   all-gather      the LM head: each rank writes its vocabulary slice of the shared logits;
//   all_gather, all_to_all_v  rows between ranks (MoE expert parallelism, moe_ep.h): each rank
//                   posts its send buffer, and after a barrier every rank copies its pieces.
// Thread-safety: one step at a time per group; each rank calls with its own index.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/aligned_buffer.h"
#include "core/barrier.h"
#include "core/mapped_file.h"
#include "core/status.h"
#include "engine/collectives.h"
#include "engine/weights.h"

namespace recur {

class Config;
class ThreadPool;

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

// Columns `cols` of w for one of `ranks` ranks: a copy when ranks > 1, the whole matrix as a
// view (no copy) when there is one rank. The row-parallel shard of a weight.
Result<std::unique_ptr<OwnedWeight>> row_parallel_shard(const Weight& w, Span cols, int ranks);

// Once every rank's row-parallel shards are copied out of `sources`: releases this process's
// resident pages of each source whose bytes lie in `mapping` (a read-only file map: they refault
// from the file if read again), so TP>1 does not keep both the file pages and the copies.
// Sources elsewhere (synthetic, converted or W8A8 weights: anonymous memory) are left alone.
// Returns the bytes released.
Result<size_t> release_copied_sources(const MappedFile& mapping, std::span<const Weight* const> sources);

// Sums the rank-order partials slots[0..P)[i] into out[i], rounding to bf16 when dtype says so
// (both backends reduce with this, so they agree bit for bit).
void sum_partials_in_rank_order(std::span<const float* const> slots, float* out, int64_t n, ReduceDtype dtype);
// partial rounded to bf16 (or copied) into slot: what each rank contributes to the sum.
void stage_partial(const float* partial, float* slot, int64_t n, ReduceDtype dtype);

// The threads backend of Collectives: ranks are threads of this process.
class RankGroup final : public Collectives {
 public:
  RankGroup(int ranks, int64_t max_elements, ReduceDtype dtype = ReduceDtype::kF32);
  int ranks() const override { return ranks_; }
  std::string_view backend() const override { return "threads"; }
  // Called by every rank with its partial[n] (n <= max_elements); returns with
  // out[n] = partial_0 + ... + partial_{P-1}.
  void all_reduce_sum(int rank, const float* partial, float* out, int64_t n) override;
  void all_gather(int rank, const void* send, std::span<const int64_t> bytes, void* out) override;
  void all_to_all_v(int rank, const void* send, std::span<const int64_t> send_bytes, void* recv,
                    std::span<const int64_t> recv_bytes) override;
  void barrier(int) override { barrier_.arrive_and_wait(); }
  void barrier() { barrier_.arrive_and_wait(); }

 private:
  struct Posted {
    const std::byte* data = nullptr;
    std::span<const int64_t> bytes;
  };
  int ranks_;
  ReduceDtype dtype_;
  Barrier barrier_;
  std::vector<std::vector<float>> slots_;
  std::vector<Posted> posted_;  // [rank]: its send buffer during all_gather / all_to_all_v
};

// The ranks of a session with tp > 1: a pinned pool of `ranks` threads (named "rank R" in
// traces) and their RankGroup. run(fn) calls fn(rank) on every rank and returns when all did.
class RankRunner {
 public:
  static Result<std::unique_ptr<RankRunner>> create(int ranks, int64_t max_elements, ReduceDtype dtype);
  ~RankRunner();
  RankGroup& group() { return *group_; }
  void run(const std::function<void(int rank)>& fn);

 private:
  std::unique_ptr<ThreadPool> pool_;
  std::unique_ptr<RankGroup> group_;
};

}  // namespace recur
