// GEMV: y[m] = sum_n W[m, n] * x[n], fp32, W row-major [M, N] with row stride N.
//
// The memory-bound half of decoding (every weight read once per token). Three paths (scalar,
// AVX2, AVX-512) registered as variants of kernel "gemv" (gemv.cc); output rows are
// independent, so the kernel partitions over M (tensor-parallel row split). Thread-safe: no
// state; calls may run concurrently on disjoint outputs.
#pragma once

#include <cstdint>

namespace recur::kernels {

void gemv_scalar(const float* w, const float* x, float* y, int64_t rows, int64_t n);
void gemv_avx2(const float* w, const float* x, float* y, int64_t rows, int64_t n);
void gemv_avx512(const float* w, const float* x, float* y, int64_t rows, int64_t n);

}  // namespace recur::kernels
