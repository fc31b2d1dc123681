// Registry entries of the layer kernels (layer.h); builtin_kernels.cc lists them. Each has a
// float64 reference with per-element error scales, a cost model and, where rows are
// independent, partitioning. Vector kernels register scalar / avx2 / avx512 variants calling
// that ISA's table directly. Integer inputs the check cannot draw validly (ids, group sizes,
// positions) are functions of the shape, stated in each help text. Pure; thread-safe.
#pragma once

#include <vector>

#include "kernels/layer/layer_ops.h"
#include "kernels/registry.h"

namespace recur::kernels {

KernelSpec rmsnorm_residual_spec();
KernelSpec swiglu_spec();
KernelSpec softmax_spec();
KernelSpec rope_spec();
KernelSpec route_topk_spec();
KernelSpec grouped_gemm_spec();
std::vector<KernelSpec> embedding_specs();  // embedding_f32, _f16, _bf16, _q8_0
KernelSpec sample_spec();

// Every spec above, in that order.
std::vector<KernelSpec> layer_kernel_specs();

// scalar / avx2 / avx512 variants of one kernel: make(ops) builds the call for a table.
std::vector<VariantSpec> isa_variants(const std::function<KernelFn(const LayerOps&)>& make, const std::string& what);

}  // namespace recur::kernels
