// Baseline x86-64 loops (SSE2 at most): what code gets on a CPU without AVX2.
#include "probe/roofline_kernels.h"

#include <cstring>

#include <emmintrin.h>

namespace recur::roofline {

namespace {

// The loop of read_scalar and read_prefetch_scalar (see roofline_kernels.h).
template <bool Prefetch>
uint64_t sum_read_scalar(const std::byte* data, size_t bytes) {
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i < bytes; i += 32) {
    if constexpr (Prefetch) {
      if (i % 64 == 0) _mm_prefetch(reinterpret_cast<const char*>(data + i + kPrefetchAhead), _MM_HINT_T0);
    }
    uint64_t w[4];
    std::memcpy(w, data + i, 32);
    a += w[0];
    b += w[1];
    c += w[2];
    d += w[3];
  }
  return a + b + c + d;  // the sum of all words, whatever the grouping
}

}  // namespace

uint64_t read_scalar(const std::byte* data, size_t bytes) { return sum_read_scalar<false>(data, bytes); }
uint64_t read_prefetch_scalar(const std::byte* data, size_t bytes) { return sum_read_scalar<true>(data, bytes); }

namespace {

// SSE2 is part of baseline x86-64, and compilers auto-vectorise "scalar" loops with it, so the
// baseline peak is 4-wide packed mul+add: a scalar-only peak (mulss/addss) would call correct
// auto-vectorised code faster than the roofline allows.
double fma_scalar(int64_t iters) {
  __m128 acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = _mm_set1_ps(1.0f + 0.01f * float(j));
  const __m128 m = _mm_set1_ps(0.999999f), k = _mm_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm_add_ps(_mm_mul_ps(acc[j], m), k);
  }
  alignas(16) float lanes[4];
  double s = 0;
  for (const __m128& v : acc) {
    _mm_store_ps(lanes, v);
    for (float x : lanes) s += x;
  }
  return s;
}

double int8_scalar(int64_t iters) {
  int32_t acc[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  volatile uint8_t ua = 3;
  volatile int8_t sb = -2;
  const int32_t a = ua, b = sb;
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) acc[j] += a * (b + j);
  }
  double s = 0;
  for (int32_t v : acc) s += v;
  return s;
}

}  // namespace

const ComputeLoop kFmaScalar{fma_scalar, 12 * 4 * 2, "mulps+addps (SSE2)"};
const ComputeLoop kInt8Scalar{int8_scalar, 8 * 2, "imul+add"};

}  // namespace recur::roofline
