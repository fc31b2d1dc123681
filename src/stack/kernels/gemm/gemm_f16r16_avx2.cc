// F16 in groups of 16 rows (gemm.h, WeightFormat::kF16R16) on AVX2 (F16C): each k is two ymm of
// 8 rows; four accumulators per half by k % 4, the scalar kernel's order per lane.
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_simd_avx2.h"

namespace recur::gemm {
namespace {

void avx2_groups(const F16R16Args& a, int64_t g0, int64_t g1) {
  const size_t group = size_t(kQ8R16Rows) * size_t(a.k);
  for (int64_t g = g0; g < g1; ++g) {
    const uint16_t* base = a.w + size_t(g) * group;
    for (int64_t t = 0; t < a.m; ++t) {
      const float* x = a.x + t * a.k;
      __m256 lo[4], hi[4];
      for (int u = 0; u < 4; ++u) lo[u] = hi[u] = _mm256_setzero_ps();
      for (int64_t c = 0; c < a.k; ++c) {
        const __m256 xb = _mm256_set1_ps(x[c]);
        const auto* w = reinterpret_cast<const __m128i*>(base + c * kQ8R16Rows);
        lo[c % 4] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128(w)), xb, lo[c % 4]);
        hi[c % 4] = _mm256_fmadd_ps(_mm256_cvtph_ps(_mm_loadu_si128(w + 1)), xb, hi[c % 4]);
      }
      float* y = a.y + t * a.ldy + g * kQ8R16Rows;
      _mm256_storeu_ps(y, _mm256_add_ps(_mm256_add_ps(lo[0], lo[1]), _mm256_add_ps(lo[2], lo[3])));
      _mm256_storeu_ps(y + 8, _mm256_add_ps(_mm256_add_ps(hi[0], hi[1]), _mm256_add_ps(hi[2], hi[3])));
    }
  }
}

}  // namespace

const F16R16Fn kAvx2F16R16 = avx2_groups;

}  // namespace recur::gemm
