// The prefill GEMM over stored weights on AVX2 + FMA + F16C (gemm_internal.h, PrefillArgs):
// the AVX-512 kernel's orientation (tokens are the vector operand, W rows the broadcast one, W
// converted to fp32 6 rows x one K block at a time) on 8-lane registers. Compiled with the AVX2
// flags only (recur_isa_sources); reached through kAvx2Prefill.
//
// X^T panels are 16 tokens wide ([k][16] fp32, one 64-byte line per k) and the register tile is
// 6 rows x 16 tokens: 12 ymm accumulators, 2 loads of X^T and 6 broadcasts per k for 12 FMAs,
// 15 of the 16 ymm registers. Each output sums K in blocks of kPrefillKc in k order, the
// blocks' sums added to y in order: independent of the thread count and of m. Q8_0 weights
// against Q8_0 activations run on x's Q8_0 values q d (as the AVX-512 kernel without VNNI).
#include <algorithm>

#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_prefill_util.h"
#include "kernels/gemm/gemm_simd_avx2.h"

namespace recur::gemm {
namespace {

constexpr int kPanel8Tokens = 16;

// c[i][8 j + l] = sum over k < kb of w[i][k] * xt[k][8 j + l], for i < 6, j < NV.
template <int NV>
void prefill8_tile(const float* const* w, const float* xt, int64_t kb, float* c) {
  __m256 acc[kPrefillRows][NV];
  for (auto& row : acc)
    for (auto& v : row) v = _mm256_setzero_ps();
  const float *w0 = w[0], *w1 = w[1], *w2 = w[2], *w3 = w[3], *w4 = w[4], *w5 = w[5];
  for (int64_t k = 0; k < kb; ++k) {
    const float* xk = xt + k * kPanel8Tokens;
    __m256 x[NV];
    for (int j = 0; j < NV; ++j) x[j] = _mm256_load_ps(xk + 8 * j);
    const float* wk[kPrefillRows] = {w0 + k, w1 + k, w2 + k, w3 + k, w4 + k, w5 + k};
    for (int i = 0; i < kPrefillRows; ++i) {
      const __m256 b = _mm256_broadcast_ss(wk[i]);
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm256_fmadd_ps(b, x[j], acc[i][j]);
    }
  }
  for (int i = 0; i < kPrefillRows; ++i)
    for (int j = 0; j < NV; ++j) _mm256_store_ps(c + i * kPanel8Tokens + 8 * j, acc[i][j]);
}

// W row r, columns [k0, k0 + kb), as fp32 into out (exact for f16, bf16 and Q8_0's d q).
void prefill8_widen_row(const PrefillArgs& a, int64_t r, int64_t k0, int64_t kb, float* out) {
  const auto* row = static_cast<const uint8_t*>(a.w) + size_t(r) * a.w_row_bytes;
  if (a.format == WeightFormat::kQ8_0) {
    for (int64_t b = k0 / kQ8Block; b < (k0 + kb) / kQ8Block; ++b) {
      const uint8_t* blk = row + b * kQ8BlockBytes;
      uint16_t d16;
      __builtin_memcpy(&d16, blk, 2);
      const __m256 d = _mm256_set1_ps(_cvtsh_ss(d16));
      float* o = out + (b * kQ8Block - k0);
      for (int g = 0; g < 4; ++g) {
        const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blk + 2 + 8 * g));
        _mm256_storeu_ps(o + 8 * g, _mm256_mul_ps(d, _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q))));
      }
    }
    return;
  }
  const auto* h = reinterpret_cast<const uint16_t*>(row) + k0;
  int64_t c = 0;
  for (; c + 8 <= kb; c += 8)
    _mm256_storeu_ps(out + c, a.format == WeightFormat::kF16 ? WidenF16::load(h + c, 8) : WidenBf16::load(h + c, 8));
  if (c < kb) {
    alignas(32) float tail[8];
    const int len = int(kb - c);
    _mm256_store_ps(tail, a.format == WeightFormat::kF16 ? WidenF16::load(h + c, len) : WidenBf16::load(h + c, len));
    std::copy_n(tail, len, out + c);
  }
}

void prefill8_rows(const PrefillArgs& a, int64_t r0, int64_t r1) {
  auto widen = [&](int64_t r, int64_t k0, int64_t kb, float* out) { prefill8_widen_row(a, r, k0, kb, out); };
  auto tile = [](const float* const* w, const float* xt, int64_t kb, int tokens, float* c) {
    if (tokens > 8) prefill8_tile<2>(w, xt, kb, c);
    else prefill8_tile<1>(w, xt, kb, c);
  };
  prefill_rows_loop<kPanel8Tokens>(a, r0, r1, widen, tile);
}

// Columns [k0, k1) of the X^T panels; q8: x's Q8_0 values q d (quantize_q8_0_rows' bits).
void prefill8_pack_x(const float* x, int64_t m, int64_t k, bool q8, float* xt, int64_t k0, int64_t k1) {
  const int64_t panels = (m + kPanel8Tokens - 1) / kPanel8Tokens;
  alignas(32) int8_t q[kQ8Block];
  for (int64_t t = 0; t < panels * kPanel8Tokens; ++t) {
    float* col = xt + (t / kPanel8Tokens) * k * kPanel8Tokens + t % kPanel8Tokens;
    if (t >= m) {
      for (int64_t c = k0; c < k1; ++c) col[c * kPanel8Tokens] = 0.0f;
      continue;
    }
    const float* row = x + t * k;
    if (!q8) {
      for (int64_t c = k0; c < k1; ++c) col[c * kPanel8Tokens] = row[c];
      continue;
    }
    for (int64_t c = k0; c < k1; c += kQ8Block) {
      float d;
      _mm256_store_si256(reinterpret_cast<__m256i*>(q), q8_quantize_block8(row + c, &d));
      for (int i = 0; i < kQ8Block; ++i) col[(c + i) * kPanel8Tokens] = float(q[i]) * d;
    }
  }
}

}  // namespace

const PrefillKernels kAvx2Prefill{.pack_x = prefill8_pack_x, .rows = prefill8_rows, .tokens = kPanel8Tokens};

}  // namespace recur::gemm
