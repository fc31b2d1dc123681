// Q8_0 in groups of 16 rows (gemm.h, WeightFormat::kQ8_0R16) on AVX-512 VNNI: one 64-byte
// load is 4 k of 16 rows (u = q + 128), one vpdpbusd against x's 4 bytes broadcast adds them
// into 16 lanes, one per row; per block the lanes' exact int32 sums minus 128 sum(q_x) times
// d_w d_x go into fp32 accumulators — the scalar kernel's order, so its bits.
//
// One token (decode): kernel.gemv.streams groups at a time (two on the Xeon), two int32 chains each (even and odd chunks), so
// each block waits on no long vpdpbusd chain and four independent loads are in flight; this
// streams the matrix at ~0.9-1.0 of one core's read bandwidth where the row layout's
// ~15 instructions per 68 bytes reach ~0.5-0.8 (docs/performance.md). Several tokens
// (batched decode, prefill): each group in turn meets the tokens in tiles of up to 8 (8
// vpdpbusd per load), the group staying in L1/L2 between tiles.
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_simd_avx512.h"

namespace recur::gemm {
namespace {

constexpr size_t kBlockQuants = 512, kBlockScales = 32;

// Tokens [t0, t0 + T) against groups [g, g + NG).
template <int T, int NG>
inline void q8r16_tile(const Q8R16Args& a, int64_t g, int64_t t0) {
  constexpr int C = T == 1 ? 2 : 1;  // int32 chains per (group, token)
  const int64_t blocks = a.k / kQ8Block;
  const size_t group = size_t(blocks) * (kBlockQuants + kBlockScales);
  const uint8_t* base = a.w + size_t(g) * group;
  const int8_t* xq = a.xq + t0 * a.k;
  __m512 f[NG][T];
  for (int i = 0; i < NG; ++i)
    for (int t = 0; t < T; ++t) f[i][t] = _mm512_setzero_ps();
  for (int64_t b = 0; b < blocks; ++b) {
    __m512i s[NG][T][C];
    for (int i = 0; i < NG; ++i)
      for (int t = 0; t < T; ++t)
        for (int c = 0; c < C; ++c) s[i][t][c] = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      __m512i xb[T];
      for (int t = 0; t < T; ++t) {
        int32_t four;
        __builtin_memcpy(&four, xq + t * a.k + b * kQ8Block + 4 * j, 4);
        xb[t] = _mm512_set1_epi32(four);
      }
      for (int i = 0; i < NG; ++i) {
        const __m512i w = _mm512_loadu_si512(base + i * group + size_t(b) * kBlockQuants + 64 * size_t(j));
        for (int t = 0; t < T; ++t) s[i][t][j % C] = _mm512_dpbusd_epi32(s[i][t][j % C], w, xb[t]);
      }
    }
    for (int i = 0; i < NG; ++i) {
      const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(
          reinterpret_cast<const __m256i*>(base + i * group + size_t(blocks) * kBlockQuants + size_t(b) * kBlockScales)));
      for (int t = 0; t < T; ++t) {
        __m512i sum = C == 2 ? _mm512_add_epi32(s[i][t][0], s[i][t][C - 1]) : s[i][t][0];
        sum = _mm512_sub_epi32(sum, _mm512_set1_epi32(a.corr[(t0 + t) * blocks + b]));
        const __m512 scale = _mm512_mul_ps(dw, _mm512_set1_ps(a.dx[(t0 + t) * blocks + b]));
        f[i][t] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), scale, f[i][t]);
      }
    }
  }
  for (int i = 0; i < NG; ++i)
    for (int t = 0; t < T; ++t) _mm512_storeu_ps(a.y + (t0 + t) * a.ldy + (g + i) * kQ8R16Rows, f[i][t]);
}

template <int T>
void q8r16_tokens(const Q8R16Args& a, int64_t g, int64_t t0) {
  q8r16_tile<T, 1>(a, g, t0);
}

void avx512_groups(const Q8R16Args& a, int64_t g0, int64_t g1) {
  if (a.m == 1) {
    int64_t g = g0;
    if (a.streams == 4)
      for (; g + 4 <= g1; g += 4) q8r16_tile<1, 4>(a, g, 0);
    if (a.streams != 1)
      for (; g + 2 <= g1; g += 2) q8r16_tile<1, 2>(a, g, 0);
    for (; g < g1; ++g) q8r16_tile<1, 1>(a, g, 0);
    return;
  }
  using TileFn = void (*)(const Q8R16Args&, int64_t, int64_t);
  static constexpr TileFn kTiles[] = {q8r16_tokens<1>, q8r16_tokens<2>, q8r16_tokens<3>, q8r16_tokens<4>,
                                      q8r16_tokens<5>, q8r16_tokens<6>, q8r16_tokens<7>, q8r16_tokens<8>};
  for (int64_t g = g0; g < g1; ++g)
    for (int64_t t0 = 0; t0 < a.m; t0 += 8) kTiles[std::min<int64_t>(8, a.m - t0) - 1](a, g, t0);
}

void avx512_prepare(const float* x, int64_t k, int64_t t0, int64_t t1, int8_t* xq, float* dx, int32_t* corr) {
  const int64_t blocks = k / kQ8Block;
  for (int64_t b = t0 * blocks; b < t1 * blocks; ++b) {
    const __m256i q = q8_quantize_block(x + b * kQ8Block, dx + b);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(xq + b * kQ8Block), q);
    const __m512i wide = _mm512_add_epi32(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q)),
                                          _mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1)));
    corr[b] = 128 * _mm512_reduce_add_epi32(wide);
  }
}

}  // namespace

const Q8R16Kernels kAvx512Q8R16{.groups = avx512_groups, .prepare = avx512_prepare};

}  // namespace recur::gemm
