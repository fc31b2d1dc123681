// The mpi backend of Collectives (collectives.h): one process per rank, launched by mpirun,
// on one host or several (docs/engine.md, "MPI mode"). Built only where CMake finds MPI
// (Debian: libopenmpi-dev), as the library recur_engine_mpi.
//
// Reduction order: all_reduce_sum gathers every rank's partial (MPI_Allgather) and adds them in
// rank order 0..P-1 on each rank (sum_partials_in_rank_order, the threads backend's code), never
// MPI_Allreduce, whose order is the library's choice; so both backends give the same bits.
// Errors: MPI's default handler (MPI_ERRORS_ARE_FATAL) aborts the job on a failed call.
// Thread-safety: collectives are called from the thread that created the MpiCollectives
// (MPI_THREAD_FUNNELED).
#pragma once

#include <memory>
#include <vector>

#include "engine/tensor_parallel.h"

namespace recur {

// Registers MpiCollectives as the engine's one-process-per-rank backend
// (set_process_collectives_factory): call once in a program that runs the engine under mpirun.
void use_mpi_collectives();

class MpiCollectives final : public Collectives {
 public:
  // Initializes MPI (once per process; MPI_Finalize runs at exit) and checks that the job has
  // `expected_ranks` processes (0: any).
  static Result<std::unique_ptr<MpiCollectives>> create(int expected_ranks = 0,
                                                        ReduceDtype dtype = ReduceDtype::kF32);
  int ranks() const override { return ranks_; }
  int rank() const { return rank_; }  // this process's rank in MPI_COMM_WORLD
  std::string_view backend() const override { return "mpi"; }
  int process_rank() const override { return rank_; }
  void all_reduce_sum(int rank, const float* partial, float* out, int64_t n) override;
  void all_gather(int rank, const void* send, std::span<const int64_t> bytes, void* out) override;
  void all_to_all_v(int rank, const void* send, std::span<const int64_t> send_bytes, void* recv,
                    std::span<const int64_t> recv_bytes) override;
  void all_to_all(int rank, const void* send, void* recv, int64_t block_bytes) override;
  void barrier(int rank) override;

 private:
  MpiCollectives(int rank, int ranks, ReduceDtype dtype) : rank_(rank), ranks_(ranks), dtype_(dtype) {}
  int rank_, ranks_;
  ReduceDtype dtype_;
  std::vector<float> gathered_;  // [P, n] partials of the last all_reduce_sum
};

}  // namespace recur
