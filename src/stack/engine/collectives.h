// Collectives: what the ranks of a tensor- or expert-parallel forward exchange, independent of
// where they run (docs/engine.md, "Collectives"). Two backends implement it:
//   threads  RankGroup (tensor_parallel.h): ranks are threads of one process, exchanging
//            through shared staging buffers;
//   mpi      MpiCollectives (collectives_mpi.h): one process per rank, launched by mpirun,
//            possibly on several hosts.
// Every backend gives the same bytes: all_reduce_sum adds the partials in rank order
// 0, 1, ..., P-1 (never a tree or ring order), so the results are bit-identical across backends
// and on every rank.
//
// Every rank calls each collective, in the same sequence, with its own index `rank` (for mpi,
// the process's rank in MPI_COMM_WORLD). Byte counts are per peer and must agree: what rank s
// sends to rank d is what d expects from s.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "core/status.h"

namespace recur {

class Config;

// Element type of the all-reduce (knob engine.tp.reduce_dtype, engine_options.h).
enum class ReduceDtype : uint8_t { kF32, kBf16 };

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int ranks() const = 0;
  virtual std::string_view backend() const = 0;
  // One process per rank (mpi): this process's rank, the only one it runs; -1 when every rank
  // is a thread of this process.
  virtual int process_rank() const { return -1; }

  // out[n] = partial_0[n] + ... + partial_{P-1}[n], added in rank order; out may be partial.
  virtual void all_reduce_sum(int rank, const float* partial, float* out, int64_t n) = 0;
  // Rank r contributes bytes[r] bytes from `send`; every rank receives all contributions,
  // concatenated in rank order, in `out` (sum(bytes) bytes; out must not overlap send).
  virtual void all_gather(int rank, const void* send, std::span<const int64_t> bytes, void* out) = 0;
  // `send` holds P consecutive blocks, send_bytes[d] bytes for rank d; `recv` receives P
  // consecutive blocks, recv_bytes[s] bytes from rank s (which must equal what s sends here).
  virtual void all_to_all_v(int rank, const void* send, std::span<const int64_t> send_bytes, void* recv,
                            std::span<const int64_t> recv_bytes) = 0;
  // Fixed blocks of block_bytes each way: one exchange, no counts to agree on beforehand.
  virtual void all_to_all(int rank, const void* send, void* recv, int64_t block_bytes);
  virtual void barrier(int rank) = 0;
};

// Knob engine.collectives: "threads" (default) or "mpi", which is valid only in a process
// launched by mpirun (the launcher's environment names this process's rank).
enum class CollectivesBackend : uint8_t { kThreads, kMpi };

// The mpi backend lives in the optional library recur_engine_mpi, so recur_engine does not
// link MPI: a program that links it calls use_mpi_collectives() (collectives_mpi.h) once, which
// registers this factory; the engine then creates the group for engine.collectives=mpi.
using ProcessCollectivesFactory = Result<std::unique_ptr<Collectives>> (*)(int ranks, ReduceDtype dtype);
void set_process_collectives_factory(ProcessCollectivesFactory factory);
// A one-process-per-rank group of `ranks` ranks; an error when no factory is registered.
Result<std::unique_ptr<Collectives>> make_process_collectives(int ranks, ReduceDtype dtype);

}  // namespace recur
