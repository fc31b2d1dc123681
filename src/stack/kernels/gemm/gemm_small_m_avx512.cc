// Small-M kernels (AVX-512) for 2 <= M <= 8 over stored weights (gemm_small_m.h): the one-row
// GEMV's arithmetic per x row (gemm_gemv_avx512.cc) with each W load shared by up to 4 rows.
// Compiled with the AVX-512 flags only (recur_isa_sources); reached through kAvx512SmallM.
//
// f32 / f16 / bf16: per x row four accumulators over consecutive 16-lane chunks (chunk c into
// accumulator c % 4 while 64-element groups last, then accumulator 0, the masked tail
// accumulator 1), summed (a0 + a1) + (a2 + a3): one 64-byte weight load, widened once, feeds
// 4 FMAs per x row. Long F16 rows prefetch 8 KiB ahead like the GEMV.
// Q8_0 x Q8_0: per pair of blocks one 64-byte weight load and one scale conversion; per x row
// the sign of x moved onto w (masked negation), one vpdpbusd against |x|, times (d_w d_x) into
// two accumulators (alternating pairs), as the GEMV does.
#include <algorithm>
#include <type_traits>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_simd_avx512.h"
#include "kernels/gemm/gemm_small_m.h"

namespace recur::gemm {
namespace {

// The GEMV's long-row F16 prefetch (gemm_gemv_avx512.cc, kGemvPrefetchBytes / kGemvWideMaxK):
// only a load pattern, so the bits do not depend on it.
constexpr int kSmallMPrefetchBytes = 8192;
constexpr int64_t kSmallMPrefetchMinK = 4096;

// x rows over this many bytes in all (M K 4) no longer stay in L1 next to the W stream (32 KiB):
// F16 M = 4 at K = 2816 (45 KiB) measured 1.5x the time per weight of K = 1024. Such calls go
// through K in blocks of kSmallMKBlock over kSmallMRowBlock W rows at a time, the accumulators
// kept in memory between blocks: the same FMAs into the same accumulators in the same order,
// so the same bits, with an x block of M x 2 KiB. Measured (F16, W in cache): K = 2816 M = 4
// 57 -> 47 us, M = 8 118 -> 94 us; K = 5632 M = 4 59 -> 47 us; but K = 1024 M = 8 (32 KiB)
// 61 -> 78 us, hence the threshold.
constexpr int64_t kSmallMBlockedFromBytes = 32 * 1024;
constexpr int64_t kSmallMKBlock = 512;  // a multiple of 64: blocks end on whole 64-element groups
constexpr int64_t kSmallMRowBlock = 4;

// W row r against M x rows over [c, end) (end = k, or a multiple of 64 before it). The
// accumulators start at zero when `first`, else from saved[i * 4 + j]; at end = k the row's
// outputs are written, else the accumulators go back to saved. With c = 0 and end = k this is
// the GEMV's loop for each x row.
template <class L, int M, bool kPrefetch>
inline void smallm_widen_span(const typename L::T* w, const GemvArgs* xr, int64_t c, int64_t end, int64_t k,
                              int64_t r, bool first, __m512* saved) {
  __m512 acc[M][4];
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < 4; ++j) acc[i][j] = first ? _mm512_setzero_ps() : saved[i * 4 + j];
  for (; c + 64 <= end; c += 64) {
    if (kPrefetch) {
      const char* ahead = reinterpret_cast<const char*>(w + c) + kSmallMPrefetchBytes;
      for (size_t line = 0; line < sizeof(typename L::T); ++line) _mm_prefetch(ahead + 64 * line, _MM_HINT_T1);
    }
    __m512 w0, w1, w2, w3;
    L::load32(w + c, w0, w1);
    L::load32(w + c + 32, w2, w3);
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) {
      const float* x = xr[i].x + c;
      acc[i][0] = _mm512_fmadd_ps(_mm512_loadu_ps(x), w0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(_mm512_loadu_ps(x + 16), w1, acc[i][1]);
      acc[i][2] = _mm512_fmadd_ps(_mm512_loadu_ps(x + 32), w2, acc[i][2]);
      acc[i][3] = _mm512_fmadd_ps(_mm512_loadu_ps(x + 48), w3, acc[i][3]);
    }
  }
  if (end < k) {
    for (int i = 0; i < M; ++i)
      for (int j = 0; j < 4; ++j) saved[i * 4 + j] = acc[i][j];
    return;
  }
  for (; c + 16 <= k; c += 16) {
    const __m512 wv = L::load(w + c, 16);
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) acc[i][0] = _mm512_fmadd_ps(_mm512_loadu_ps(xr[i].x + c), wv, acc[i][0]);
  }
  if (c < k) {
    const int len = int(k - c);
    const __m512 wv = L::load(w + c, len);
#pragma GCC unroll 4
    for (int i = 0; i < M; ++i) acc[i][1] = _mm512_fmadd_ps(load_f32(xr[i].x + c, len), wv, acc[i][1]);
  }
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i)
    xr[i].y[r] = hsum(_mm512_add_ps(_mm512_add_ps(acc[i][0], acc[i][1]), _mm512_add_ps(acc[i][2], acc[i][3])));
}

template <class L, bool kPrefetch>
void smallm_widen_rows_of(const SmallMArgs& a, int64_t r0, int64_t r1) {
  using T = typename L::T;
  const int64_t k = a.row[0].k;
  const T* w = static_cast<const T*>(a.row[0].w);
  if (a.m * k * int64_t(sizeof(float)) <= kSmallMBlockedFromBytes || k <= kSmallMKBlock) {
    for (int64_t r = r0; r < r1; ++r) {
      smallm_passes<kSmallMPassAvx512>(a.m, a.row, [&](auto rows, const GemvArgs* xr) {
        smallm_widen_span<L, decltype(rows)::value, kPrefetch>(w + r * k, xr, 0, k, k, r, true, nullptr);
      });
    }
    return;
  }
  __m512 saved[kSmallMRowBlock][kSmallMMax * 4];
  for (int64_t rb = r0; rb < r1; rb += kSmallMRowBlock) {
    const int64_t re = std::min(r1, rb + kSmallMRowBlock);
    for (int64_t c0 = 0; c0 < k; c0 += kSmallMKBlock) {
      const int64_t end = k - c0 <= kSmallMKBlock ? k : c0 + kSmallMKBlock;
      for (int64_t r = rb; r < re; ++r) {
        smallm_passes<kSmallMPassAvx512>(a.m, a.row, [&](auto rows, const GemvArgs* xr) {
          smallm_widen_span<L, decltype(rows)::value, kPrefetch>(w + r * k, xr, c0, end, k, r, c0 == 0,
                                                                 saved[r - rb] + (xr - a.row) * 4);
        });
      }
    }
  }
}

template <class L>
void smallm_widen_rows(const SmallMArgs& a, int64_t r0, int64_t r1) {
  if (std::is_same_v<L, WidenF16> && a.row[0].k > kSmallMPrefetchMinK) smallm_widen_rows_of<L, true>(a, r0, r1);
  else smallm_widen_rows_of<L, false>(a, r0, r1);
}

// Blocks b and b + 1 (or b alone when `pair` is false) of one W row against M x rows: acc[i] +=
// exact int32 lane sums times (d_w d_x), the GEMV's q8_pair_dot.
template <int M>
inline void smallm_q8_pair(const uint8_t* blk, const GemvArgs* xr, int64_t b, bool pair, __m512* acc) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
  const __m512i w = pair ? _mm512_inserti64x4(_mm512_castsi256_si512(lo),
                                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2 + kQ8BlockBytes)), 1)
                         : _mm512_zextsi256_si512(lo);
  int16_t d0, d1 = 0;
  __builtin_memcpy(&d0, blk, 2);
  if (pair) __builtin_memcpy(&d1, blk + kQ8BlockBytes, 2);
  const __m512 dw = _mm512_cvtph_ps(_mm256_inserti128_si256(_mm256_castsi128_si256(_mm_set1_epi16(d0)),
                                                            _mm_set1_epi16(d1), 1));
#pragma GCC unroll 4
  for (int i = 0; i < M; ++i) {
    const __m512i wi = _mm512_mask_sub_epi8(w, __mmask64(xr[i].x_neg[b / 2]), _mm512_setzero_si512(), w);
    const __m512i dot = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(xr[i].x_abs + b * kQ8Block), wi);
    acc[i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(dot), _mm512_mul_ps(dw, _mm512_loadu_ps(xr[i].x_scale16 + b * 8)),
                             acc[i]);
  }
}

// How far ahead the Q8_0 kernel prefetches its W row into L1. At M = 2..8 a row is consumed at a
// third to a tenth of the GEMV's rate, and without it N 1024 x K 2816 (3 KiB rows) ran 1.4-1.5x
// slower per weight than N 2816 x K 1024 from DRAM though not from cache; with it, 0.5-0.86x
// the time at M = 2, 4 (interleaved A/Bs of bench_gemm on a loaded VM).
constexpr int kSmallMQ8PrefetchBytes = 2048;

template <int M>
inline void smallm_q8_pass(const uint8_t* row, const GemvArgs* xr, int64_t blocks, int64_t r) {
  __m512 acc0[M], acc1[M];
  for (int i = 0; i < M; ++i) acc0[i] = acc1[i] = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 4 <= blocks; b += 4) {
    const char* ahead = reinterpret_cast<const char*>(row + b * kQ8BlockBytes) + kSmallMQ8PrefetchBytes;
    for (int line = 0; line < 3; ++line) _mm_prefetch(ahead + 64 * line, _MM_HINT_T0);  // 4 blocks: 136 bytes
    smallm_q8_pair<M>(row + b * kQ8BlockBytes, xr, b, true, acc0);
    smallm_q8_pair<M>(row + (b + 2) * kQ8BlockBytes, xr, b + 2, true, acc1);
  }
  for (; b < blocks; b += 2) smallm_q8_pair<M>(row + b * kQ8BlockBytes, xr, b, b + 1 < blocks, acc0);
  for (int i = 0; i < M; ++i) xr[i].y[r] = hsum(_mm512_add_ps(acc0[i], acc1[i]));
}

void smallm_q8q8_rows(const SmallMArgs& a, int64_t r0, int64_t r1) {
  const int64_t blocks = a.row[0].k / kQ8Block;
  for (int64_t r = r0; r < r1; ++r) {
    const auto* row = static_cast<const uint8_t*>(a.row[0].w) + size_t(r) * a.row[0].w_row_bytes;
    smallm_passes<kSmallMPassAvx512>(a.m, a.row, [&](auto rows, const GemvArgs* xr) {
      smallm_q8_pass<decltype(rows)::value>(row, xr, blocks, r);
    });
  }
}

// Each x row quantized by the GEMV's own preparation (kAvx512Gemv.q8_prepare), rows one after
// another in the workspace.
void smallm_q8_prepare(SmallMArgs& a, Workspace& s) {
  const int64_t k = a.row[0].k, blocks = k / kQ8Block, pairs = (blocks + 1) / 2;
  auto* abs = reinterpret_cast<int8_t*>(s.bytes(0, size_t(a.m * pairs * 64)));
  auto* d = reinterpret_cast<float*>(s.bytes(1, size_t(a.m * blocks) * sizeof(float)));
  auto* neg = reinterpret_cast<uint64_t*>(s.bytes(2, size_t(a.m * pairs) * sizeof(uint64_t)));
  auto* scale16 = reinterpret_cast<float*>(s.bytes(3, size_t(a.m * pairs * 16) * sizeof(float)));
  for (int64_t i = 0; i < a.m; ++i) {
    GemvQ8X q{.abs = abs + i * pairs * 64, .neg = neg + i * pairs, .scale16 = scale16 + i * pairs * 16,
              .d = d + i * blocks};
    kAvx512Gemv.q8_prepare(a.row[i].x, k, q);
    a.row[i].x_abs = q.abs;
    a.row[i].x_neg = q.neg;
    a.row[i].x_scale16 = q.scale16;
  }
}

}  // namespace

const SmallMKernels kAvx512SmallM{.f32 = smallm_widen_rows<WidenF32>,
                                  .f16w = smallm_widen_rows<WidenF16>,
                                  .bf16w = smallm_widen_rows<WidenBf16>,
                                  .q8_0q8 = smallm_q8q8_rows,
                                  .q8_prepare = smallm_q8_prepare};

}  // namespace recur::gemm
