// AVX2 + FMA path of gemv (compiled with recur_isa_sources(avx2)): four rows per pass share
// each load of x.
#include <immintrin.h>

#include "kernels/gemv/gemv.h"

namespace recur::kernels {
namespace {

float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace

void gemv_avx2(const float* w, const float* x, float* y, int64_t rows, int64_t n) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* w0 = w + r * n;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps(), a2 = _mm256_setzero_ps(), a3 = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      __m256 xv = _mm256_loadu_ps(x + i);
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + i), xv, a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + n + i), xv, a1);
      a2 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + 2 * n + i), xv, a2);
      a3 = _mm256_fmadd_ps(_mm256_loadu_ps(w0 + 3 * n + i), xv, a3);
    }
    float s[4] = {hsum(a0), hsum(a1), hsum(a2), hsum(a3)};
    for (; i < n; ++i)
      for (int j = 0; j < 4; ++j) s[j] += w0[j * n + i] * x[i];
    for (int j = 0; j < 4; ++j) y[r + j] = s[j];
  }
  for (; r < rows; ++r) {
    const float* wr = w + r * n;
    __m256 a = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) a = _mm256_fmadd_ps(_mm256_loadu_ps(wr + i), _mm256_loadu_ps(x + i), a);
    float s = hsum(a);
    for (; i < n; ++i) s += wr[i] * x[i];
    y[r] = s;
  }
}

}  // namespace recur::kernels
