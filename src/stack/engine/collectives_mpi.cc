#include "engine/collectives_mpi.h"

#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <limits>

namespace recur {
namespace {

void mpi_finalize_at_exit() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

// MPI counts are int: byte counts and their displacements, checked against INT_MAX.
struct MpiCounts {
  std::vector<int> counts, displs;
};
MpiCounts mpi_counts_of(std::span<const int64_t> bytes) {
  MpiCounts c;
  int64_t offset = 0;
  for (int64_t b : bytes) {
    if (b < 0 || offset + b > std::numeric_limits<int>::max()) {
      std::fprintf(stderr, "recur mpi: a collective of %lld bytes exceeds MPI's int counts\n",
                   static_cast<long long>(offset + b));
      std::abort();
    }
    c.counts.push_back(int(b));
    c.displs.push_back(int(offset));
    offset += b;
  }
  return c;
}

}  // namespace

Result<std::unique_ptr<MpiCollectives>> MpiCollectives::create(int expected_ranks, ReduceDtype dtype) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      return internal_error("MPI_Init_thread failed");
    std::atexit(mpi_finalize_at_exit);
  }
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (expected_ranks > 0 && size != expected_ranks)
    return invalid_argument("engine.collectives=mpi: the job has {} processes, {} ranks expected (mpirun -np {})",
                            size, expected_ranks, expected_ranks);
  return std::unique_ptr<MpiCollectives>(new MpiCollectives(rank, size, dtype));
}

void use_mpi_collectives() {
  set_process_collectives_factory([](int ranks, ReduceDtype dtype) -> Result<std::unique_ptr<Collectives>> {
    RECUR_ASSIGN_OR_RETURN(std::unique_ptr<MpiCollectives> c, MpiCollectives::create(ranks, dtype));
    return std::unique_ptr<Collectives>(std::move(c));
  });
}

void MpiCollectives::all_reduce_sum(int, const float* partial, float* out, int64_t n) {
  if (ranks_ == 1) {
    if (out != partial) std::memcpy(out, partial, size_t(n) * sizeof(float));
    return;
  }
  std::vector<float> staged(static_cast<size_t>(n));
  stage_partial(partial, staged.data(), n, dtype_);
  gathered_.resize(size_t(n) * size_t(ranks_));
  const std::vector<int64_t> bytes(size_t(ranks_), n * int64_t(sizeof(float)));
  all_gather(rank_, staged.data(), bytes, gathered_.data());
  std::vector<const float*> slots;
  for (int r = 0; r < ranks_; ++r) slots.push_back(gathered_.data() + size_t(r) * size_t(n));
  sum_partials_in_rank_order(slots, out, n, dtype_);
}

void MpiCollectives::all_gather(int, const void* send, std::span<const int64_t> bytes, void* out) {
  const MpiCounts c = mpi_counts_of(bytes);
  MPI_Allgatherv(send, c.counts[size_t(rank_)], MPI_BYTE, out, c.counts.data(), c.displs.data(), MPI_BYTE,
                 MPI_COMM_WORLD);
}

void MpiCollectives::all_to_all_v(int, const void* send, std::span<const int64_t> send_bytes, void* recv,
                                  std::span<const int64_t> recv_bytes) {
  const MpiCounts s = mpi_counts_of(send_bytes), r = mpi_counts_of(recv_bytes);
  MPI_Alltoallv(send, s.counts.data(), s.displs.data(), MPI_BYTE, recv, r.counts.data(), r.displs.data(), MPI_BYTE,
                MPI_COMM_WORLD);
}

void MpiCollectives::all_to_all(int, const void* send, void* recv, int64_t block_bytes) {
  const MpiCounts c = mpi_counts_of(std::vector<int64_t>(size_t(ranks_), block_bytes));
  MPI_Alltoall(send, c.counts[0], MPI_BYTE, recv, c.counts[0], MPI_BYTE, MPI_COMM_WORLD);
}

void MpiCollectives::barrier(int) { MPI_Barrier(MPI_COMM_WORLD); }

}  // namespace recur
