#include "kernels/builtin_kernels.h"
#include "kernels/attention/attention_register.h"
#include "kernels/gemm/gemm_register.h"
#include "kernels/kda/kda_register.h"
#include "kernels/layer/layer_specs.h"
#include "kernels/mla/mla_register.h"

namespace recur::kernels {

std::vector<KernelSpec> builtin_kernel_specs() {
  std::vector<KernelSpec> specs;
  specs.push_back(rmsnorm_spec());
  specs.push_back(gemv_spec());
  specs.push_back(gemm_spec());
  specs.push_back(gemm_w8a8_spec());
  specs.push_back(gemm_amx_spec());
  specs.push_back(gemm_w8a8_amx_spec());
  specs.push_back(gemm_q8_0_spec());
  specs.push_back(kda_decode_spec());
  specs.push_back(kda_replay_decode_spec());
  specs.push_back(kda_prefill_spec());
  specs.push_back(attention_decode_spec());
  specs.push_back(attention_prefill_spec());
  specs.push_back(mla_decode_spec());
  specs.push_back(mla_prefill_spec());
  for (KernelSpec& k : layer_kernel_specs()) specs.push_back(std::move(k));
  return specs;
}

}  // namespace recur::kernels
