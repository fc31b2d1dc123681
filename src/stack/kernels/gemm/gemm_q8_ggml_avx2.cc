// The AVX2 path of the ggml-order Q8_0 dot (gemm_q8_ggml.h): ggml's own instruction sequence
// (|w| and sign-adjusted x into vpmaddubsw, vpmaddwd with ones, one vfmadd per block, then
// hsum_float_8), so each output has the scalar path's bits. Compiled with the AVX2 flags only.
#include <immintrin.h>

#include <cstring>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_q8_ggml.h"

namespace recur::gemm {

void q8_0_ggml_rows_avx2(const Q8GgmlArgs& a, int64_t n0, int64_t n1) {
  const int64_t blocks = a.k / kQ8Block;
  const __m256i ones = _mm256_set1_epi16(1);
  for (int64_t r = n0; r < n1; ++r) {
    const std::byte* wr = a.w + size_t(r) * a.w_row_bytes;
    for (int64_t i = 0; i < a.m; ++i) {
      const int8_t* xq = a.xq + i * a.k;
      const float* xd = a.xd + i * blocks;
      __m256 acc = _mm256_setzero_ps();
      for (int64_t b = 0; b < blocks; ++b) {
        const std::byte* blk = wr + size_t(b) * kQ8BlockBytes;
        uint16_t dw;
        std::memcpy(&dw, blk, sizeof dw);
        const __m256 d = _mm256_set1_ps(_cvtsh_ss(dw) * xd[b]);
        const __m256i qw = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
        const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + b * kQ8Block));
        // Pairs of |w| * sign-adjusted x (at most 2 * 128 * 127: no int16 saturation), then
        // pairs of those: lane j holds the exact sum of products 4j .. 4j+3.
        const __m256i pairs = _mm256_maddubs_epi16(_mm256_sign_epi8(qw, qw), _mm256_sign_epi8(qx, qw));
        const __m256 q = _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, ones));
        acc = _mm256_fmadd_ps(d, q, acc);
      }
      __m128 res = _mm_add_ps(_mm256_extractf128_ps(acc, 1), _mm256_castps256_ps128(acc));
      res = _mm_add_ps(res, _mm_movehl_ps(res, res));
      res = _mm_add_ss(res, _mm_movehdup_ps(res));
      a.y[i * a.ldy + r] = _mm_cvtss_f32(res);
    }
  }
}

}  // namespace recur::gemm
