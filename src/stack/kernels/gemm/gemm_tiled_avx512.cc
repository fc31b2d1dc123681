// The tiled f32 microkernel (AVX-512): a 6 x 64 block of C in 24 zmm accumulators, fed by a
// packed A strip ([kc][6], broadcast one element at a time) and a packed B panel slice
// ([kc][64], four zmm loads per k). 24 independent FMA chains cover the FMA latency of two
// pipes; per k it issues 24 FMAs against 4 vector loads and 6 broadcasts.
// Compiled with the AVX-512 flags only (recur_isa_sources); reached through kMicroAvx512.
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_simd_avx512.h"

namespace recur::gemm {
namespace {

void micro_6x64(const float* a, const float* b, int64_t kc, float* c, int64_t ldc, int mr, int nr,
                bool accumulate) {
  __m512 acc[kTileM][4];
  for (int i = 0; i < kTileM; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const float* bk = b + k * kTileN;
    const __m512 b0 = _mm512_load_ps(bk), b1 = _mm512_load_ps(bk + 16);
    const __m512 b2 = _mm512_load_ps(bk + 32), b3 = _mm512_load_ps(bk + 48);
    _mm_prefetch(reinterpret_cast<const char*>(bk + 8 * kTileN), _MM_HINT_T0);
    const float* ak = a + k * kTileM;
    for (int i = 0; i < kTileM; ++i) {
      const __m512 ai = _mm512_set1_ps(ak[i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
      acc[i][2] = _mm512_fmadd_ps(ai, b2, acc[i][2]);
      acc[i][3] = _mm512_fmadd_ps(ai, b3, acc[i][3]);
    }
  }
  for (int i = 0; i < mr; ++i) {
    float* ci = c + i * ldc;
    for (int j = 0; j < 4; ++j) {
      const int cols = nr - 16 * j;
      if (cols <= 0) break;
      const __mmask16 m = mask16(cols);
      __m512 v = acc[i][j];
      if (accumulate) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, ci + 16 * j));
      _mm512_mask_storeu_ps(ci + 16 * j, m, v);
    }
  }
}

}  // namespace

const MicroFn kMicroAvx512 = micro_6x64;

}  // namespace recur::gemm
