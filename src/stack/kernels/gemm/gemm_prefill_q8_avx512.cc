// The prefill GEMM of Q8_0 weights against Q8_0 activations on AVX-512 VNNI
// (gemm_internal.h, PrefillQ8Args). Compiled with the AVX-512 flags only (recur_isa_sources);
// reached through kAvx512PrefillQ8.
//
// vpdpbusd multiplies unsigned by signed bytes and sums 4 of them per int32 lane: the tokens
// are the lanes (x fed as u = q + 128, 4 consecutive k of 16 tokens per zmm) and 4 bytes of a W
// row are broadcast, so one instruction does 64 multiply-adds where an fp32 FMA does 16. Per
// block of 32 and (row, 16 tokens): 8 vpdpbusd, then (dot - 128 sum q_w) exactly in int32,
// converted and scaled by d_w d_x into fp32 accumulators: 12 instructions per 512
// multiply-adds against 32 FMAs on the fp32 path.
#include <algorithm>
#include <vector>

#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_prefill_util.h"
#include "kernels/gemm/gemm_simd_avx512.h"

namespace recur::gemm {
namespace {

constexpr int kQ8Rows = 6;
constexpr int kQuads = kQ8Block / 4;  // 4-byte groups per block

// c[i][16 j + l] = sum over blocks b < nb of (dot_b - comp[i][b]) * dw[i][b] * dx[b][16 j + l].
template <int V>
void q8_prefill_tile(const uint8_t* const* w, const int32_t* comp, const float* dw, int64_t nb, const uint8_t* xq,
                     const float* dx, float* c) {
  __m512 acc[kQ8Rows][V];
  for (auto& row : acc)
    for (auto& v : row) v = _mm512_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    __m512i dot[kQ8Rows][V];
    for (auto& row : dot)
      for (auto& v : row) v = _mm512_setzero_si512();
    for (int q = 0; q < kQuads; ++q) {
      const uint8_t* xk = xq + (b * kQuads + q) * kPrefillQ8Tokens * 4;
      __m512i x[V];
      for (int j = 0; j < V; ++j) x[j] = _mm512_load_si512(xk + 64 * j);
      for (int i = 0; i < kQ8Rows; ++i) {
        int32_t w4;
        __builtin_memcpy(&w4, w[i] + b * kQ8BlockBytes + 2 + 4 * q, 4);
        const __m512i wb = _mm512_set1_epi32(w4);
        for (int j = 0; j < V; ++j) dot[i][j] = _mm512_dpbusd_epi32(dot[i][j], x[j], wb);
      }
    }
    __m512 d[V];
    for (int j = 0; j < V; ++j) d[j] = _mm512_load_ps(dx + b * kPrefillQ8Tokens + 16 * j);
    for (int i = 0; i < kQ8Rows; ++i) {
      const __m512i cmp = _mm512_set1_epi32(comp[i * nb + b]);
      const __m512 s = _mm512_set1_ps(dw[i * nb + b]);
      for (int j = 0; j < V; ++j)
        acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(dot[i][j], cmp)), _mm512_mul_ps(d[j], s),
                                    acc[i][j]);
    }
  }
  for (int i = 0; i < kQ8Rows; ++i)
    for (int j = 0; j < V; ++j) _mm512_store_ps(c + i * kPrefillQ8Tokens + 16 * j, acc[i][j]);
}

// d_w and comp = 128 sum q_w of blocks [b0, b0 + nb) of one Q8_0 row.
void q8_prefill_row_terms(const uint8_t* row, int64_t b0, int64_t nb, int32_t* comp, float* dw) {
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = row + (b0 + b) * kQ8BlockBytes;
    uint16_t d16;
    __builtin_memcpy(&d16, blk, 2);
    dw[b] = _cvtsh_ss(d16);
    // sum (q + 128) over 32 bytes with sad against zero, then remove the 32 * 128.
    const __m256i u = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2)),
                                       _mm256_set1_epi8(char(0x80)));
    const __m256i s = _mm256_sad_epu8(u, _mm256_setzero_si256());
    const __m128i s2 = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    const int64_t sum = _mm_cvtsi128_si64(s2) + _mm_extract_epi64(s2, 1) - 32 * 128;
    comp[b] = int32_t(128 * sum);
  }
}

void q8_prefill_rows(const PrefillQ8Args& a, int64_t r0, int64_t r1) {
  thread_local std::vector<uint8_t> zeros;
  thread_local std::vector<int32_t> comp;
  thread_local std::vector<float> dw;
  alignas(64) float c[kQ8Rows * kPrefillQ8Tokens];
  const int64_t kc = std::min(kPrefillKc, a.k), kcb = kc / kQ8Block, kbl = a.k / kQ8Block;
  zeros.assign(size_t(kcb * kQ8BlockBytes), 0);
  comp.resize(size_t(kQ8Rows * kcb));
  dw.resize(size_t(kQ8Rows * kcb));
  const int64_t panels = (a.m + kPrefillQ8Tokens - 1) / kPrefillQ8Tokens;
  for (int64_t k0 = 0; k0 < a.k; k0 += kc) {
    const int64_t b0 = k0 / kQ8Block, nb = std::min(kcb, kbl - b0);
    for (int64_t r = r0; r < r1; r += kQ8Rows) {
      const int rows = int(std::min<int64_t>(kQ8Rows, r1 - r));
      const uint8_t* w[kQ8Rows];
      for (int i = 0; i < kQ8Rows; ++i) {
        if (i < rows) {
          const auto* row = static_cast<const uint8_t*>(a.w) + size_t(r + i) * a.w_row_bytes;
          w[i] = row + b0 * kQ8BlockBytes;
          q8_prefill_row_terms(row, b0, nb, comp.data() + i * nb, dw.data() + i * nb);
        } else {
          w[i] = zeros.data();
          std::fill_n(comp.data() + i * nb, nb, 0);
          std::fill_n(dw.data() + i * nb, nb, 0.0f);
        }
      }
      prefetch_next_row_block(a.w, a.w_row_bytes, WeightFormat::kQ8_0, a.k, r, r0, r1, k0, kc);
      for (int64_t p = 0; p < panels; ++p) {
        const int tokens = int(std::min<int64_t>(kPrefillQ8Tokens, a.m - p * kPrefillQ8Tokens));
        const uint8_t* xq = a.xq + (p * (a.k / 4) + k0 / 4) * kPrefillQ8Tokens * 4;
        const float* dx = a.dx + (p * kbl + b0) * kPrefillQ8Tokens;
        if (tokens > 16) q8_prefill_tile<2>(w, comp.data(), dw.data(), nb, xq, dx, c);
        else q8_prefill_tile<1>(w, comp.data(), dw.data(), nb, xq, dx, c);
        store_tile_transposed(c, kPrefillQ8Tokens, rows, tokens, a.y + p * kPrefillQ8Tokens * a.n + r, a.n, k0 > 0);
      }
    }
  }
}

void q8_prefill_pack_x(const float* x, int64_t m, int64_t k, uint8_t* xq, float* dx, int64_t t0, int64_t t1) {
  const int64_t blocks = k / kQ8Block;
  alignas(32) uint8_t u[kQ8Block];
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t p = t / kPrefillQ8Tokens, lane = t % kPrefillQ8Tokens;
    for (int64_t b = 0; b < blocks; ++b) {
      float d = 0;
      const __m256i q = t < m ? q8_quantize_block(x + t * k + b * kQ8Block, &d) : _mm256_setzero_si256();
      _mm256_store_si256(reinterpret_cast<__m256i*>(u), _mm256_xor_si256(q, _mm256_set1_epi8(char(0x80))));
      dx[(p * blocks + b) * kPrefillQ8Tokens + lane] = d;
      for (int g = 0; g < kQuads; ++g)
        __builtin_memcpy(xq + ((p * (k / 4) + b * kQuads + g) * kPrefillQ8Tokens + lane) * 4, u + 4 * g, 4);
    }
  }
}

}  // namespace

const PrefillQ8Kernels kAvx512PrefillQ8{.pack_x = q8_prefill_pack_x, .rows = q8_prefill_rows};

}  // namespace recur::gemm
