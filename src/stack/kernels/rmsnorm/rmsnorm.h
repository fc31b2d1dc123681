// RMSNorm over the rows of a matrix: y[m, :] = x[m, :] / sqrt(mean(x[m, :]^2) + eps) * w.
//
// fp32 in and out; x and y are [M, N] row-major with row stride N, w is [N]. Three paths
// (scalar, AVX2, AVX-512) registered as variants of kernel "rmsnorm" (rmsnorm_spec.cc); rows
// are independent, so the kernel partitions over M. Thread-safe: no state; calls may run
// concurrently on disjoint outputs.
#pragma once

#include <cstdint>

#include "core/cpu_features.h"

namespace recur::kernels {

inline constexpr float kRmsNormEps = 1e-6f;

void rmsnorm_scalar(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps);
void rmsnorm_avx2(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps);
void rmsnorm_avx512(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps);

// The variant of an ISA level (what the registered variant of that ISA runs), for callers that
// pass their own eps (the engine: the model's).
using RmsNormFn = void (*)(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps);
RmsNormFn rmsnorm_fn(Isa isa);

}  // namespace recur::kernels
