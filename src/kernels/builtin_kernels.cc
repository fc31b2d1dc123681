#include "kernels/builtin_kernels.h"

namespace recur::kernels {

std::vector<KernelSpec> builtin_kernel_specs() {
  std::vector<KernelSpec> specs;
  specs.push_back(rmsnorm_spec());
  specs.push_back(gemv_spec());
  return specs;
}

}  // namespace recur::kernels
