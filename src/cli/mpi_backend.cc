// Compiled into the CLI only where CMake built recur_engine_mpi: registers the mpi collectives
// backend, so `recur generate` and `recur engine bench` run under mpirun with
// engine.collectives=mpi (docs/engine.md, "MPI mode"). Registering only installs a factory;
// MPI starts when a batch with engine.collectives=mpi asks for its process group.
#include "engine/collectives_mpi.h"

namespace recur {
namespace {
const bool cli_mpi_backend_registered = [] {
  use_mpi_collectives();
  return true;
}();
}  // namespace
}  // namespace recur
