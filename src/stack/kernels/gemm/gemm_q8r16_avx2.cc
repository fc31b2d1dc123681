// Q8_0 in groups of 16 rows (gemm.h, WeightFormat::kQ8_0R16) on AVX2, for CPUs without
// AVX-512 VNNI: each 64-byte chunk is two ymm of 8 rows x 4 k; u ^ 0x80 gives q back, and
// vpmaddubsw(|x|, sign(q, x)) + vpmaddwd sums the 4 products per row exactly (|x|, |q| <= 127
// keep the pairwise sums in int16). Per block the int32 sums times d_w d_x go into fp32
// accumulators in the scalar kernel's order, so its bits.
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_simd_avx2.h"

namespace recur::gemm {
namespace {

constexpr size_t kBlockQuants = 512, kBlockScales = 32;

void avx2_groups(const Q8R16Args& a, int64_t g0, int64_t g1) {
  const int64_t blocks = a.k / kQ8Block;
  const size_t group = size_t(blocks) * (kBlockQuants + kBlockScales);
  const __m256i flip = _mm256_set1_epi8(char(0x80)), ones = _mm256_set1_epi16(1);
  for (int64_t g = g0; g < g1; ++g) {
    const uint8_t* base = a.w + size_t(g) * group;
    for (int64_t t = 0; t < a.m; ++t) {
      const int8_t* xq = a.xq + t * a.k;
      __m256 f0 = _mm256_setzero_ps(), f1 = f0;
      for (int64_t b = 0; b < blocks; ++b) {
        __m256i s0 = _mm256_setzero_si256(), s1 = s0;
        for (int j = 0; j < 8; ++j) {
          int32_t four;
          __builtin_memcpy(&four, xq + b * kQ8Block + 4 * j, 4);
          const __m256i xb = _mm256_set1_epi32(four), xa = _mm256_abs_epi8(xb);
          const uint8_t* chunk = base + size_t(b) * kBlockQuants + 64 * size_t(j);
          const __m256i q0 = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk)), flip);
          const __m256i q1 = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(chunk + 32)), flip);
          s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(_mm256_maddubs_epi16(xa, _mm256_sign_epi8(q0, xb)), ones));
          s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(_mm256_maddubs_epi16(xa, _mm256_sign_epi8(q1, xb)), ones));
        }
        const uint8_t* scales = base + size_t(blocks) * kBlockQuants + size_t(b) * kBlockScales;
        const __m256 dx = _mm256_set1_ps(a.dx[t * blocks + b]);
        const __m256 d0 = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales))), dx);
        const __m256 d1 =
            _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(scales + 16))), dx);
        f0 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s0), d0, f0);
        f1 = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s1), d1, f1);
      }
      float* y = a.y + t * a.ldy + g * kQ8R16Rows;
      _mm256_storeu_ps(y, f0);
      _mm256_storeu_ps(y + 8, f1);
    }
  }
}

// corr stays unset: these sums are of q itself.
void avx2_prepare(const float* x, int64_t k, int64_t t0, int64_t t1, int8_t* xq, float* dx, int32_t*) {
  const int64_t blocks = k / kQ8Block;
  for (int64_t t = t0; t < t1; ++t) q8_quantize_row8(x + t * k, k, xq + t * k, dx + t * blocks);
}

}  // namespace

const Q8R16Kernels kAvx2Q8R16{.groups = avx2_groups, .prepare = avx2_prepare};

}  // namespace recur::gemm
