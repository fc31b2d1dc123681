// Small-M kernels (AVX2 + FMA + F16C) for 2 <= M <= 8 over stored weights (gemm_small_m.h): the
// AVX2 one-row GEMV's arithmetic per x row (gemm_gemv_avx2.cc) with each W load shared by the
// rows of a pass. Compiled with the AVX2 flags only (recur_isa_sources); reached through
// kAvx2SmallM.
//
// f32 / f16 / bf16: per x row four accumulators over consecutive 8-lane chunks (chunk c into
// accumulator c % 4 while 32-element groups last, then accumulator 0, the zero-padded tail
// accumulator 1), summed (a0 + a1) + (a2 + a3); 2 x rows a pass (16 ymm registers).
// Q8_0 x Q8_0: per block one weight load and one scale conversion; per x row the exact int32 dot
// of |x| and sign(x)·w, times d_w d_x into two accumulators (even and odd blocks); 4 rows a pass.
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_simd_avx2.h"
#include "kernels/gemm/gemm_small_m.h"

namespace recur::gemm {
namespace {

template <class L, int M>
inline void smallm8_widen_pass(const typename L::T* w, const GemvArgs* xr, int64_t k, int64_t r) {
  __m256 acc[M][4];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = _mm256_setzero_ps();
  int64_t c = 0;
  for (; c + 32 <= k; c += 32) {
    const __m256 w0 = L::load(w + c, 8), w1 = L::load(w + c + 8, 8), w2 = L::load(w + c + 16, 8),
                 w3 = L::load(w + c + 24, 8);
#pragma GCC unroll 2
    for (int i = 0; i < M; ++i) {
      const float* x = xr[i].x + c;
      acc[i][0] = _mm256_fmadd_ps(_mm256_loadu_ps(x), w0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(_mm256_loadu_ps(x + 8), w1, acc[i][1]);
      acc[i][2] = _mm256_fmadd_ps(_mm256_loadu_ps(x + 16), w2, acc[i][2]);
      acc[i][3] = _mm256_fmadd_ps(_mm256_loadu_ps(x + 24), w3, acc[i][3]);
    }
  }
  for (; c + 8 <= k; c += 8) {
    const __m256 wv = L::load(w + c, 8);
#pragma GCC unroll 2
    for (int i = 0; i < M; ++i) acc[i][0] = _mm256_fmadd_ps(_mm256_loadu_ps(xr[i].x + c), wv, acc[i][0]);
  }
  if (c < k) {
    const int len = int(k - c);
    const __m256 wv = L::load(w + c, len);
#pragma GCC unroll 2
    for (int i = 0; i < M; ++i) acc[i][1] = _mm256_fmadd_ps(load_f32(xr[i].x + c, len), wv, acc[i][1]);
  }
#pragma GCC unroll 2
  for (int i = 0; i < M; ++i)
    xr[i].y[r] = hsum(_mm256_add_ps(_mm256_add_ps(acc[i][0], acc[i][1]), _mm256_add_ps(acc[i][2], acc[i][3])));
}

template <class L>
void smallm8_widen_rows(const SmallMArgs& a, int64_t r0, int64_t r1) {
  using T = typename L::T;
  const int64_t k = a.row[0].k;
  for (int64_t r = r0; r < r1; ++r) {
    const T* w = static_cast<const T*>(a.row[0].w) + r * k;
    smallm_passes<kSmallMPassAvx2Widen>(a.m, a.row, [&](auto rows, const GemvArgs* xr) {
      smallm8_widen_pass<L, decltype(rows)::value>(w, xr, k, r);
    });
  }
}

// acc[i] += block b of a W row against x row i: float(exact int32 lane sums) times d_w d_x.
template <int M>
inline void smallm8_q8_block(const uint8_t* row, const GemvArgs* xr, int64_t b, __m256* acc) {
  const uint8_t* blk = row + b * kQ8BlockBytes;
  const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
  uint16_t d16;
  __builtin_memcpy(&d16, blk, 2);
  const float dw = _cvtsh_ss(d16);
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) {
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xr[i].x_q + b * kQ8Block));
    const __m256 dot = _mm256_cvtepi32_ps(q8_block_dot(_mm256_abs_epi8(xq), xq, wq));
    acc[i] = _mm256_fmadd_ps(dot, _mm256_set1_ps(dw * xr[i].x_d[b]), acc[i]);
  }
}

template <int M>
inline void smallm8_q8_pass(const uint8_t* row, const GemvArgs* xr, int64_t blocks, int64_t r) {
  __m256 acc0[M], acc1[M];
  for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = _mm256_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    smallm8_q8_block<M>(row, xr, b, acc0);
    smallm8_q8_block<M>(row, xr, b + 1, acc1);
  }
  if (b < blocks) smallm8_q8_block<M>(row, xr, b, acc0);
  for (int i = 0; i < M; ++i) xr[i].y[r] = hsum(_mm256_add_ps(acc0[i], acc1[i]));
}

void smallm8_q8q8_rows(const SmallMArgs& a, int64_t r0, int64_t r1) {
  const int64_t blocks = a.row[0].k / kQ8Block;
  for (int64_t r = r0; r < r1; ++r) {
    const auto* row = static_cast<const uint8_t*>(a.row[0].w) + size_t(r) * a.row[0].w_row_bytes;
    smallm_passes<kSmallMPassAvx2Q8>(a.m, a.row, [&](auto rows, const GemvArgs* xr) {
      smallm8_q8_pass<decltype(rows)::value>(row, xr, blocks, r);
    });
  }
}

// x rows quantized as the AVX2 GEMV reads them (x_q, x_d).
void smallm8_q8_prepare(SmallMArgs& a, Workspace& s) {
  const int64_t k = a.row[0].k;
  auto* q = reinterpret_cast<int8_t*>(s.bytes(0, size_t(a.m * k)));
  auto* d = reinterpret_cast<float*>(s.bytes(1, size_t(a.m * (k / kQ8Block)) * sizeof(float)));
  for (int64_t i = 0; i < a.m; ++i) {
    kAvx2Gemv.q8_quantize(a.row[i].x, k, q + i * k, d + i * (k / kQ8Block));
    a.row[i].x_q = q + i * k;
    a.row[i].x_d = d + i * (k / kQ8Block);
  }
}

}  // namespace

const SmallMKernels kAvx2SmallM{.f32 = smallm8_widen_rows<WidenF32>,
                                .f16w = smallm8_widen_rows<WidenF16>,
                                .bf16w = smallm8_widen_rows<WidenBf16>,
                                .q8_0q8 = smallm8_q8q8_rows,
                                .q8_prepare = smallm8_q8_prepare};

}  // namespace recur::gemm
