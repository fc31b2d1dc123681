// One-row GEMV kernels (AVX-512) for M = 1 over stored weights (gemm_internal.h, GemvArgs).
// Compiled with the AVX-512 flags only (recur_isa_sources); reached through kAvx512Gemv.
//
// f32 / f16 / bf16: four accumulators over consecutive 16-lane chunks (chunk c feeds
// accumulator c % 4 while 64-element groups last, then accumulator 0, the masked tail
// accumulator 1), summed (a0 + a1) + (a2 + a3) and reduced at the end. With one chain, each
// chunk waits for the previous FMA: at 4 cycles per 32 bytes of f16 a core streams ~8 bytes a
// cycle, below what one core can read.
//
// Q8_0 x Q8_0: two blocks per vpdpbusd on 512-bit registers (the 32 weights of block b in
// lanes 0-7, of block b + 1 in lanes 8-15; AVX-512 has no 512-bit vpsignb, so the signs of x
// move onto w by a masked negation and |x| is the unsigned operand), then each lane's exact
// int32 sum times (d_w d_x) of its block into two accumulators (alternating pairs). The integer
// dots are the same as the dot kernels'; only the order of the fp32 sum differs.
#include <type_traits>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_simd_avx512.h"

namespace recur::gemm {
namespace {

// How far ahead of the loads the long-row F16 GEMV prefetches its row into L2: 8 KiB measured
// 0.77-0.88 of the read peak at K = 5632 against 0.65 without (16 KiB the same, 1-4 KiB worse;
// into L1 or with the NTA hint 0.46; docs/performance.md, "F16 decode, long rows").
constexpr int kGemvPrefetchBytes = 8192;

// One row: chunk c (16 lanes) into accumulator c % 4 while 64-element groups last, then the
// 16-lane chunks into acc0 and the masked tail into acc1. kWide reads 16-bit weights as 64-byte
// loads split in registers (L::load32) instead of two 32-byte loads: the same arithmetic, so the
// same bits. kPrefetch asks for the row's lines kGemvPrefetchBytes ahead (a prefetch never
// faults, so running past the matrix is harmless).
template <class L, bool kWide, bool kPrefetch = false>
inline float gemv_widen_row(const typename L::T* w, const float* x, int64_t k) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t c = 0;
  for (; c + 64 <= k; c += 64) {
    if (kPrefetch) {
      const char* ahead = reinterpret_cast<const char*>(w + c) + kGemvPrefetchBytes;
      for (size_t line = 0; line < sizeof(typename L::T); ++line) _mm_prefetch(ahead + 64 * line, _MM_HINT_T1);
    }
    __m512 w0, w1, w2, w3;
    if (kWide) {
      L::load32(w + c, w0, w1);
      L::load32(w + c + 32, w2, w3);
    } else {
      w0 = L::load(w + c, 16), w1 = L::load(w + c + 16, 16), w2 = L::load(w + c + 32, 16), w3 = L::load(w + c + 48, 16);
    }
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + c), w0, acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(x + c + 16), w1, acc1);
    acc2 = _mm512_fmadd_ps(_mm512_loadu_ps(x + c + 32), w2, acc2);
    acc3 = _mm512_fmadd_ps(_mm512_loadu_ps(x + c + 48), w3, acc3);
  }
  for (; c + 16 <= k; c += 16) acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(x + c), L::load(w + c, 16), acc0);
  if (c < k) {
    const int len = int(k - c);
    acc1 = _mm512_fmadd_ps(load_f32(x + c, len), L::load(w + c, len), acc1);
  }
  return hsum(_mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
}

// Rows longer than this K: 64-byte loads alone measured 0.88-0.93x of 32-byte loads at K = 5632
// (F16; x's 22 KiB and the row's lines then overflow L1), 1.17-1.21x at K = 2048. F16 and F32
// long rows take the prefetch above (F16 1.2-1.35x the 32-byte loads; F32 at 2048 x 5632 on one
// thread 2.4 against 3.1 ms, 16 KiB ahead 2.7 ms); bf16 long rows keep the 32-byte-load kernel
// (not measured).
constexpr int64_t kGemvWideMaxK = 4096;

template <class L>
void gemv_widen_rows(const GemvArgs& a, int64_t r0, int64_t r1) {
  using T = typename L::T;
  const bool wide = a.k <= kGemvWideMaxK, long_prefetched = !wide && !std::is_same_v<L, WidenBf16>;
  for (int64_t r = r0; r < r1; ++r) {
    const T* w = static_cast<const T*>(a.w) + r * a.k;
    a.y[r] = wide       ? gemv_widen_row<L, true>(w, a.x, a.k)
             : long_prefetched ? gemv_widen_row<L, true, true>(w, a.x, a.k)
                        : gemv_widen_row<L, false>(w, a.x, a.k);
  }
}

// R consecutive W rows against one fp16 x: each x chunk is loaded and widened once for all R
// rows, and each row keeps gemv_widen_row's four accumulators and order (the same bits as one
// row at a time). 4 rows at K = 2048 on one thread measured 0.91-0.93 of the read peak against
// 0.83-0.87 one row at a time and 0.86-0.88 two (interleaved bench_gemm runs, weights in huge
// pages): a quarter of the x loads and conversions, and four streams in flight.
constexpr int kGemvF16xRows = 4;
template <int R>
inline void gemv_f16x_rows_at_once(const uint16_t* w, const uint16_t* x, int64_t k, float* y) {
  __m512 acc[R][4];
  for (int j = 0; j < R; ++j) acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = _mm512_setzero_ps();
  int64_t c = 0;
  for (; c + 64 <= k; c += 64) {
    __m512 x0, x1, x2, x3;
    WidenF16::load32(x + c, x0, x1);
    WidenF16::load32(x + c + 32, x2, x3);
#pragma GCC unroll 4
    for (int j = 0; j < R; ++j) {
      __m512 w0, w1, w2, w3;
      WidenF16::load32(w + j * k + c, w0, w1);
      WidenF16::load32(w + j * k + c + 32, w2, w3);
      acc[j][0] = _mm512_fmadd_ps(x0, w0, acc[j][0]);
      acc[j][1] = _mm512_fmadd_ps(x1, w1, acc[j][1]);
      acc[j][2] = _mm512_fmadd_ps(x2, w2, acc[j][2]);
      acc[j][3] = _mm512_fmadd_ps(x3, w3, acc[j][3]);
    }
  }
  for (; c + 16 <= k; c += 16) {
    const __m512 xv = WidenF16::load(x + c, 16);
    for (int j = 0; j < R; ++j) acc[j][0] = _mm512_fmadd_ps(xv, WidenF16::load(w + j * k + c, 16), acc[j][0]);
  }
  if (c < k) {
    const int len = int(k - c);
    const __m512 xv = WidenF16::load(x + c, len);
    for (int j = 0; j < R; ++j) acc[j][1] = _mm512_fmadd_ps(xv, WidenF16::load(w + j * k + c, len), acc[j][1]);
  }
  for (int j = 0; j < R; ++j)
    y[j] = hsum(_mm512_add_ps(_mm512_add_ps(acc[j][0], acc[j][1]), _mm512_add_ps(acc[j][2], acc[j][3])));
}

// F16 weights against x rounded to fp16. Rows up to kGemvWideMaxK read x as fp16 (x_f16), four
// rows at a time: at K = 2048 on one thread (Xeon, weights in huge pages) 0.91-0.93 of the read
// peak against 0.63-0.75 for fp32 x one row at a time. Longer
// rows read the fp32 copy of the rounded values (x) with gemv_widen_rows' prefetch: 0.92
// against 0.86 at K = 5632. Both give the bits of f16w on the rounded x (docs/gemm.md,
// "F16 activations").
void gemv_f16_f16x_rows(const GemvArgs& a, int64_t r0, int64_t r1) {
  if (a.k > kGemvWideMaxK) {
    gemv_widen_rows<WidenF16>(a, r0, r1);
    return;
  }
  const auto* w = static_cast<const uint16_t*>(a.w);
  int64_t r = r0;
  for (; r + kGemvF16xRows <= r1; r += kGemvF16xRows)
    gemv_f16x_rows_at_once<kGemvF16xRows>(w + r * a.k, a.x_f16, a.k, a.y + r);
  for (; r < r1; ++r) gemv_f16x_rows_at_once<1>(w + r * a.k, a.x_f16, a.k, a.y + r);
}

// acc += blocks b and b + 1 of a Q8_0 row (or b alone when `pair` is false) against x: the exact
// int32 lane sums times (d_w d_x) of each block's lanes, ggml's order (fp32 product of the two
// scales, then one FMA).
inline __m512 q8_pair_dot(const uint8_t* blk, const GemvArgs& a, int64_t b, bool pair, __m512 acc) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
  __m512i w = pair ? _mm512_inserti64x4(_mm512_castsi256_si512(lo),
                                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2 + kQ8BlockBytes)), 1)
                   : _mm512_zextsi256_si512(lo);
  w = _mm512_mask_sub_epi8(w, __mmask64(a.x_neg[b / 2]), _mm512_setzero_si512(), w);
  const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(a.x_abs + b * kQ8Block), w);
  int16_t d0, d1 = 0;
  __builtin_memcpy(&d0, blk, 2);
  if (pair) __builtin_memcpy(&d1, blk + kQ8BlockBytes, 2);
  const __m512 dw = _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(d0)),
                                                            _mm_set1_epi16(d1), 1));
  return _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_loadu_ps(a.x_scale16 + b * 8)), acc);
}

void gemv_q8q8_rows(const GemvArgs& a, int64_t r0, int64_t r1) {
  const int64_t blocks = a.k / kQ8Block;
  for (int64_t r = r0; r < r1; ++r) {
    const auto* row = static_cast<const uint8_t*>(a.w) + size_t(r) * a.w_row_bytes;
    __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0;
    int64_t b = 0;
    for (; b + 4 <= blocks; b += 4) {
      acc0 = q8_pair_dot(row + b * kQ8BlockBytes, a, b, true, acc0);
      acc1 = q8_pair_dot(row + (b + 2) * kQ8BlockBytes, a, b + 2, true, acc1);
    }
    for (; b < blocks; b += 2) acc0 = q8_pair_dot(row + b * kQ8BlockBytes, a, b, b + 1 < blocks, acc0);
    a.y[r] = hsum(_mm512_add_ps(acc0, acc1));
  }
}

void q8_prepare_gemv_x(const float* x, int64_t k, GemvQ8X& out) {
  const int64_t blocks = k / kQ8Block;
  for (int64_t p = 0; p < (blocks + 1) / 2; ++p) {
    float d0 = 0, d1 = 0;
    const __m256i q0 = q8_quantize_block(x + 2 * p * kQ8Block, &d0);
    const __m256i q1 = 2 * p + 1 < blocks ? q8_quantize_block(x + (2 * p + 1) * kQ8Block, &d1) : _mm256_setzero_si256();
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(q0), q1, 1);
    out.neg[p] = _mm512_movepi8_mask(q);
    _mm512_storeu_si512(out.abs + p * 64, _mm512_abs_epi8(q));
    _mm512_storeu_ps(out.scale16 + p * 16, _mm512_insertf32x8(_mm512_set1_ps(d0), _mm256_set1_ps(d1), 1));
    out.d[2 * p] = d0;
    if (2 * p + 1 < blocks) out.d[2 * p + 1] = d1;
  }
}

}  // namespace

const GemvKernels kAvx512Gemv{.f32 = gemv_widen_rows<WidenF32>,
                              .f16w = gemv_widen_rows<WidenF16>,
                              .f16w_f16x = gemv_f16_f16x_rows,
                              .bf16w = gemv_widen_rows<WidenBf16>,
                              .q8_0q8 = gemv_q8q8_rows,
                              .q8_prepare = q8_prepare_gemv_x};

}  // namespace recur::gemm
