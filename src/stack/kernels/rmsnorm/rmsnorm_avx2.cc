// AVX2 + FMA path of rmsnorm (compiled with recur_isa_sources(avx2)).
#include <immintrin.h>

#include <cmath>

#include "kernels/rmsnorm/rmsnorm.h"

namespace recur::kernels {
namespace {

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace

void rmsnorm_avx2(const float* x, const float* w, float* y, int64_t rows, int64_t n, float eps) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
      __m256 v0 = _mm256_loadu_ps(xr + i), v1 = _mm256_loadu_ps(xr + i + 8);
      a0 = _mm256_fmadd_ps(v0, v0, a0);
      a1 = _mm256_fmadd_ps(v1, v1, a1);
    }
    float ss = hsum(_mm256_add_ps(a0, a1));
    for (; i < n; ++i) ss += xr[i] * xr[i];
    const __m256 scale = _mm256_set1_ps(1.0f / std::sqrt(ss / float(n) + eps));
    i = 0;
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(yr + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(xr + i), scale), _mm256_loadu_ps(w + i)));
    const float s = _mm256_cvtss_f32(scale);
    for (; i < n; ++i) yr[i] = xr[i] * s * w[i];
  }
}

}  // namespace recur::kernels
