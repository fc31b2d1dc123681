// Float64 references of gemm() and gemm_stored(), and the error scale each output is judged by.
//
// reference_exact: y = sum_k x[m, k] w[n, k] of the fp32 inputs, in double — the "true" value
// every precision's error is measured against (docs/gemm.md).
// reference_precision: the same sum over the operands as the precision sees them (bf16 / tf32
// roundings, hi/lo splits with lo·lo dropped, int8 quantization with its scales), products and
// sums in double — so a kernel's remaining error is its fp32 accumulation only.
// reference_stored: the sum over the exactly widened stored weights (fp16, bf16, Q8_0 d·q).
// Each also fills mag[m, n] = sum_k |x w| (of the same operands), the scale of rounding error.
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "kernels/gemm/gemm.h"

namespace recur::gemm {

void reference_exact(std::span<const float> x, std::span<const float> w, int64_t m, int64_t n, int64_t k,
                     std::span<double> y, std::span<double> mag);

Status reference_precision(Precision p, std::span<const float> x, std::span<const float> w, int64_t m, int64_t n,
                           int64_t k, std::span<double> y, std::span<double> mag);

void reference_stored(const WeightView& w, const float* x, int64_t m, std::span<double> y, std::span<double> mag);

}  // namespace recur::gemm
