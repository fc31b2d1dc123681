#!/bin/sh
# ctest collectives_mpi: the mpi collectives backend under `mpirun -np 2` must give the threads
# backend's bytes (src/stack/engine/collectives_mpi_test.cc). Skipped (77) where mpirun is absent.
# Shared-memory transports only (self, vader/sm): no network probing, so it starts in about a second.
test_binary=$1
if ! command -v mpirun >/dev/null 2>&1; then
  echo "SKIP: mpirun not found (Debian: openmpi-bin)"
  exit 77
fi
export OMPI_MCA_btl=self,vader
export OMPI_MCA_btl_vader_single_copy_mechanism=none  # no CMA/ptrace needs inside containers
export OMPI_MCA_pml=ob1
export OMPI_MCA_plm_rsh_agent=false  # never try ssh: every rank runs on this host
export OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_hwloc_base_binding_policy=none
# Waiting ranks yield the core instead of busy-polling: on 2 shared vCPUs polling ranks starve
# the rank they wait for (5 s instead of under 1 s under load).
export OMPI_MCA_mpi_yield_when_idle=1
exec mpirun --allow-run-as-root -np 2 "$test_binary"
