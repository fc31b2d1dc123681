#include "engine/collectives.h"

#include <cstdlib>
#include <vector>

#include "core/knobs.h"

namespace recur {

void Collectives::all_to_all(int rank, const void* send, void* recv, int64_t block_bytes) {
  const std::vector<int64_t> counts(size_t(ranks()), block_bytes);
  all_to_all_v(rank, send, counts, recv, counts);
}

namespace {
ProcessCollectivesFactory g_process_collectives_factory = nullptr;
}  // namespace

void set_process_collectives_factory(ProcessCollectivesFactory factory) { g_process_collectives_factory = factory; }

Result<std::unique_ptr<Collectives>> make_process_collectives(int ranks, ReduceDtype dtype) {
  if (g_process_collectives_factory == nullptr)
    return unsupported("engine.collectives=mpi: this program was built without the mpi backend "
                       "(recur_engine_mpi, use_mpi_collectives())");
  return g_process_collectives_factory(ranks, dtype);
}

}  // namespace recur
