// AVX-512 path of gemv (compiled with recur_isa_sources(avx512)): four rows per pass share
// each load of x; masked tails.
#include <immintrin.h>

#include "kernels/gemv/gemv.h"

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

void gemv_avx512(const float* w, const float* x, float* y, int64_t rows, int64_t n) {
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) {
    const float* w0 = w + r * n;
    __m512 a0 = _mm512_setzero_ps(), a1 = _mm512_setzero_ps(), a2 = _mm512_setzero_ps(), a3 = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
      __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
      __m512 xv = _mm512_maskz_loadu_ps(m, x + i);
      a0 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w0 + i), xv, a0);
      a1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w0 + n + i), xv, a1);
      a2 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w0 + 2 * n + i), xv, a2);
      a3 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, w0 + 3 * n + i), xv, a3);
    }
    y[r] = hsum(a0);
    y[r + 1] = hsum(a1);
    y[r + 2] = hsum(a2);
    y[r + 3] = hsum(a3);
  }
  for (; r < rows; ++r) {
    const float* wr = w + r * n;
    __m512 a = _mm512_setzero_ps();
    for (int64_t i = 0; i < n; i += 16) {
      __mmask16 m = n - i >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - i)) - 1);
      a = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, wr + i), _mm512_maskz_loadu_ps(m, x + i), a);
    }
    y[r] = hsum(a);
  }
}

}  // namespace recur::kernels
