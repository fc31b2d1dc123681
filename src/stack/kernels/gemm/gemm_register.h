// Registry entry of the GEMM by precision (gemm.h) as the kernel `gemm`, so check and bench can
// judge every precision against the float64 product and the agent can pick one by knob.
#pragma once

#include "kernels/registry.h"

namespace recur::kernels {

// Y[M, N] = X[M, K] W[N, K]^T; variants f32, f32_tiled, bf16, bf16x3, bf16x6, tf32, tf32x3;
// partitioned over N (column-parallel tensor parallelism: each shard owns rows of W).
KernelSpec gemm_spec();
// W8A8 (int8 X per token, int8 W per channel) judged against the same quantization in float64.
KernelSpec gemm_w8a8_spec();
// The AMX kernels (gemm_amx.h; on the tile emulator unless kernel.gemm.amx=on on an AMX CPU), probe
// only until an AMX session integrates them in the engine: gemm_amx (bf16, bf16x3, bf16x6 against
// the exact product), gemm_w8a8_amx (w8a8 against gemm_w8a8's reference) and gemm_q8_0 (Q8_0 x
// Q8_0: variants stored, gemm_stored's kernels, and amx; shape M, N, B with K = 32 B).
KernelSpec gemm_amx_spec();
KernelSpec gemm_w8a8_amx_spec();
KernelSpec gemm_q8_0_spec();

}  // namespace recur::kernels
