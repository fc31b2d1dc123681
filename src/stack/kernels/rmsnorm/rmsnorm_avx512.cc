// AVX-512 path of rmsnorm (compiled with recur_isa_sources(avx512)); masked tails.
#include <immintrin.h>

#include <cmath>

#include "kernels/rmsnorm/rmsnorm.h"

namespace recur::kernels {
namespace {

// Through memory, not _mm512_reduce_add_ps or extracts: GCC 12 warns (-Wmaybe-uninitialized)
// inside its own header for those.
float hsum(__m512 v) {
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, v);
  float s0 = 0, s1 = 0;
  for (int i = 0; i < 16; i += 2) {
    s0 += lanes[i];
    s1 += lanes[i + 1];
  }
  return s0 + s1;
}

}  // namespace

void rmsnorm_avx512(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps();
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
      __m512 v0 = _mm512_loadu_ps(xr + i), v1 = _mm512_loadu_ps(xr + i + 16);
      a0 = _mm512_fmadd_ps(v0, v0, a0);
      a1 = _mm512_fmadd_ps(v1, v1, a1);
    }
    for (; i < n; i += 16) {
      __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
      __m512 v = _mm512_maskz_loadu_ps(m, xr + i);
      a0 = _mm512_fmadd_ps(v, v, a0);
    }
    const float ss = hsum(_mm512_add_ps(a0, a1));
    const __m512 scale = _mm512_set1_ps(1.0f / std::sqrt(ss / float(n) + eps));
    for (i = 0; i < n; i += 16) {
      __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
      __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, xr + i), scale);
      _mm512_mask_storeu_ps(yr + i, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, w + i)));
    }
  }
}

}  // namespace recur::kernels
