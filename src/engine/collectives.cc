#include "engine/collectives.h"

#include <cstdlib>
#include <vector>

#include "core/knobs.h"

namespace recur {

// Tagged with its own component only (not engine:tp): which backend runs the ranks is a launch
// choice, not a tuning step for the agent.
RECUR_KNOB(engine_collectives,
           {.name = "engine.collectives", .type = KnobType::kEnum, .choices = {"threads", "mpi"},
            .default_value = "threads", .components = {"engine:collectives"},
            .acts = KnobActs::kEngine,
            .help = "how ranks exchange data: threads of one process (threads) or one process per rank under "
                    "mpirun, possibly on several hosts (mpi; docs/engine.md)"});

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

Result<CollectivesBackend> collectives_backend_from_config(const Config& config) {
  Result<std::string> v = config.get("engine.collectives");
  if (!v) return unexpected(v.error());
  if (*v != "mpi") return CollectivesBackend::kThreads;
  // OpenMPI's mpirun sets OMPI_COMM_WORLD_SIZE in every process it launches; PMI_SIZE covers
  // other launchers (MPICH's hydra, srun).
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMI_SIZE") == nullptr)
    return invalid_argument("engine.collectives=mpi: this process was not launched by mpirun "
                            "(no OMPI_COMM_WORLD_SIZE or PMI_SIZE in the environment)");
  return CollectivesBackend::kMpi;
}

}  // namespace recur
