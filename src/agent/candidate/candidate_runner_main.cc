// recur-kernel-runner: the smallest program that runs this tree's kernel variants for the
// evaluator of `recur candidate build` (docs/candidates.md). A candidate's tree builds this
// target instead of the whole `recur` binary.
#include "candidate/candidate_runner_server.h"

int main() { return recur::agent::serve_kernel_runner(recur::kernels::KernelRegistry::global()); }
