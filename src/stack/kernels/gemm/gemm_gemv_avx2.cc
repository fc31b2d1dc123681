// One-row GEMV kernels (AVX2 + FMA + F16C) for M = 1 over stored weights (gemm_internal.h,
// GemvArgs): the AVX-512 kernels' scheme on 8-lane registers, for CPUs without AVX-512 (and,
// for Q8_0, without VNNI). Compiled with the AVX2 flags only (recur_isa_sources); reached
// through kAvx2Gemv.
//
// f32 / f16 / bf16: four accumulators over consecutive 8-lane chunks (chunk c feeds accumulator
// c % 4 while 32-element groups last, then accumulator 0, the zero-padded tail accumulator 1),
// summed (a0 + a1) + (a2 + a3). The dot tiles they replace keep one chain per output: 8 lanes of
// f16 per 4-cycle FMA latency is 4 bytes a cycle, well under one core's share of DRAM.
//
// Q8_0 x Q8_0: x quantized with quantize_q8_0_rows' bits (q8_quantize_row8: x_q, x_d); per block the exact int32 dot
// of |x| and sign(x)·w (vpmaddubsw + vpmaddwd, no VNNI needed), times d_w d_x into two
// accumulators (even and odd blocks).
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_simd_avx2.h"

namespace recur::gemm {
namespace {

template <class L>
void gemv8_widen_rows(const GemvArgs& a, int64_t r0, int64_t r1) {
  using T = typename L::T;
  const int64_t k = a.k;
  for (int64_t r = r0; r < r1; ++r) {
    const T* w = static_cast<const T*>(a.w) + r * k;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
    int64_t c = 0;
    for (; c + 32 <= k; c += 32) {
      acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a.x + c), L::load(w + c, 8), acc0);
      acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a.x + c + 8), L::load(w + c + 8, 8), acc1);
      acc2 = _mm256_fmadd_ps(_mm256_loadu_ps(a.x + c + 16), L::load(w + c + 16, 8), acc2);
      acc3 = _mm256_fmadd_ps(_mm256_loadu_ps(a.x + c + 24), L::load(w + c + 24, 8), acc3);
    }
    for (; c + 8 <= k; c += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a.x + c), L::load(w + c, 8), acc0);
    if (c < k) {
      const int len = int(k - c);
      acc1 = _mm256_fmadd_ps(load_f32(a.x + c, len), L::load(w + c, len), acc1);
    }
    a.y[r] = hsum(_mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3)));
  }
}

// acc += block b of a Q8_0 row against x: float(exact int32 lane sums) times d_w d_x, 8 lanes.
inline void gemv8_q8_block(const uint8_t* row, const GemvArgs& a, int64_t b, __m256& acc) {
  const uint8_t* blk = row + b * kQ8BlockBytes;
  const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.x_q + b * kQ8Block));
  const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
  uint16_t d16;
  __builtin_memcpy(&d16, blk, 2);
  const __m256 dot = _mm256_cvtepi32_ps(q8_block_dot(_mm256_abs_epi8(xq), xq, wq));
  acc = _mm256_fmadd_ps(dot, _mm256_set1_ps(_cvtsh_ss(d16) * a.x_d[b]), acc);
}

void gemv8_q8q8_rows(const GemvArgs& a, int64_t r0, int64_t r1) {
  const int64_t blocks = a.k / kQ8Block;
  for (int64_t r = r0; r < r1; ++r) {
    const auto* row = static_cast<const uint8_t*>(a.w) + size_t(r) * a.w_row_bytes;
    __m256 acc0 = _mm256_setzero_ps(), acc1 = acc0;
    int64_t b = 0;
    for (; b + 2 <= blocks; b += 2) {
      gemv8_q8_block(row, a, b, acc0);
      gemv8_q8_block(row, a, b + 1, acc1);
    }
    if (b < blocks) gemv8_q8_block(row, a, b, acc0);
    a.y[r] = hsum(_mm256_add_ps(acc0, acc1));
  }
}

}  // namespace

const GemvKernels kAvx2Gemv{.f32 = gemv8_widen_rows<WidenF32>,
                            .f16w = gemv8_widen_rows<WidenF16>,
                            .bf16w = gemv8_widen_rows<WidenBf16>,
                            .q8_0q8 = gemv8_q8q8_rows,
                            .q8_quantize = q8_quantize_row8};

}  // namespace recur::gemm
