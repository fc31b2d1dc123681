// The runner side of the kernel-runner protocol (candidate_protocol.h) over a kernel registry:
// `recur candidate runner` (the main tree's variants, the evaluator's baseline) and the
// `recur-kernel-runner` program a candidate's tree builds (its variants) both call it.
// Runs on the calling thread until `quit` or end of input.
#pragma once

#include "kernels/registry.h"

namespace recur::agent {

// Serves requests from stdin to stdout with the tensors on fd kRunnerShmFd; returns the exit
// code (0 at quit or end of input, 1 when stdout breaks).
int serve_kernel_runner(const kernels::KernelRegistry& registry);

}  // namespace recur::agent
