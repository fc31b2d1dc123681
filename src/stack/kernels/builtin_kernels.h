// The kernels recur ships, as registry entries; KernelRegistry::global() registers them all.
// Each kernel folder defines its <name>_spec(); builtin_kernels.cc lists them.
#pragma once

#include "kernels/registry.h"

namespace recur::kernels {

KernelSpec rmsnorm_spec();  // rmsnorm/rmsnorm.cc
KernelSpec gemv_spec();     // gemv/gemv.cc

}  // namespace recur::kernels
