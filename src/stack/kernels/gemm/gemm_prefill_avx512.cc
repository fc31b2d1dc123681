// The prefill GEMM over stored weights on AVX-512 (gemm_internal.h, PrefillArgs): X^T packing
// and the 6-row x 64-token register tile. Compiled with the AVX-512 flags only
// (recur_isa_sources); reached through kAvx512Prefill.
//
// Why this orientation: the weights are what a prefill streams (N x K, once per call) and the
// tokens are few (m <= 512); transposing X costs m k once per call, while transposing W (the
// classic packed-B panel) would cost n k per call. So W rows stay contiguous, converted to fp32
// 6 rows x one K block at a time (one vcvtph2ps / shift / d q multiply per 16 weights), and
// are the broadcast operand; the tokens are the vector operand. Per k: 4 loads of X^T, 6
// broadcasts, 24 FMAs. The 6 x 64 tile goes through a small buffer to y[token][row] (added
// for K blocks after the first).
#include <algorithm>

#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_prefill_util.h"
#include "kernels/gemm/gemm_simd_avx512.h"

namespace recur::gemm {
namespace {

// c[i][16 j + l] = sum over k < kb of w[i][k] * xt[k][16 j + l], for i < 6, j < NV.
template <int NV>
void prefill_tile(const float* const* w, const float* xt, int64_t kb, float* c) {
  __m512 acc[kPrefillRows][NV];
  for (auto& row : acc)
    for (auto& v : row) v = _mm512_setzero_ps();
  const float *w0 = w[0], *w1 = w[1], *w2 = w[2], *w3 = w[3], *w4 = w[4], *w5 = w[5];
  for (int64_t k = 0; k < kb; ++k) {
    const float* xk = xt + k * kPrefillTokens;
    __m512 x[NV];
    for (int j = 0; j < NV; ++j) x[j] = _mm512_load_ps(xk + 16 * j);
    const float wk[kPrefillRows] = {w0[k], w1[k], w2[k], w3[k], w4[k], w5[k]};
    for (int i = 0; i < kPrefillRows; ++i) {
      const __m512 b = _mm512_set1_ps(wk[i]);
      for (int j = 0; j < NV; ++j) acc[i][j] = _mm512_fmadd_ps(b, x[j], acc[i][j]);
    }
  }
  for (int i = 0; i < kPrefillRows; ++i)
    for (int j = 0; j < NV; ++j) _mm512_store_ps(c + i * kPrefillTokens + 16 * j, acc[i][j]);
}

// W row r, columns [k0, k0 + kb), as fp32 into out (exact for every stored format).
void prefill_widen_row(const PrefillArgs& a, int64_t r, int64_t k0, int64_t kb, float* out) {
  const auto* row = static_cast<const uint8_t*>(a.w) + size_t(r) * a.w_row_bytes;
  switch (a.format) {
    case WeightFormat::kF32:
      std::copy_n(reinterpret_cast<const float*>(row) + k0, kb, out);
      return;
    case WeightFormat::kF16:
    case WeightFormat::kBf16: {
      const auto* h = reinterpret_cast<const uint16_t*>(row) + k0;
      for (int64_t c = 0; c < kb; c += 16) {
        const int len = int(std::min<int64_t>(16, kb - c));
        const __m512 v = a.format == WeightFormat::kF16 ? WidenF16::load(h + c, len) : WidenBf16::load(h + c, len);
        _mm512_mask_storeu_ps(out + c, mask16(len), v);
      }
      return;
    }
    case WeightFormat::kQ8_0:
      for (int64_t b = k0 / kQ8Block; b < (k0 + kb) / kQ8Block; ++b) {
        const uint8_t* blk = row + b * kQ8BlockBytes;
        uint16_t d16;
        __builtin_memcpy(&d16, blk, 2);
        const __m512 d = _mm512_set1_ps(_cvtsh_ss(d16));
        const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 2));
        float* o = out + (b * kQ8Block - k0);
        _mm512_storeu_ps(o, _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q)))));
        _mm512_storeu_ps(o + 16,
                         _mm512_mul_ps(d, _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1)))));
      }
      return;
    case WeightFormat::kQ8_0R16:
    case WeightFormat::kF16R16: return;  // gemm_stored runs their own kernels
  }
}

void prefill_rows(const PrefillArgs& a, int64_t r0, int64_t r1) {
  auto widen = [&](int64_t r, int64_t k0, int64_t kb, float* out) { prefill_widen_row(a, r, k0, kb, out); };
  auto tile = [](const float* const* w, const float* xt, int64_t kb, int tokens, float* c) {
    switch ((tokens + 15) / 16) {
      case 1: prefill_tile<1>(w, xt, kb, c); break;
      case 2: prefill_tile<2>(w, xt, kb, c); break;
      case 3: prefill_tile<3>(w, xt, kb, c); break;
      default: prefill_tile<4>(w, xt, kb, c); break;
    }
  };
  prefill_rows_loop<kPrefillTokens>(a, r0, r1, widen, tile);
}

// 16 rows of 16 floats transposed in registers: r[i] holds row i on entry, column i on return.
void prefill_transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    u[i] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 1] = _mm512_shuffle_ps(t[i], t[i + 2], _MM_SHUFFLE(3, 2, 3, 2));
    u[i + 2] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(1, 0, 1, 0));
    u[i + 3] = _mm512_shuffle_ps(t[i + 1], t[i + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  // u[4 b + j] holds, in each 128-bit lane l, element j of rows 4 b .. 4 b + 3, columns 4 l + j.
  for (int b = 0; b < 16; b += 8)
    for (int j = 0; j < 4; ++j) {
      t[b + j] = _mm512_shuffle_f32x4(u[b + j], u[b + 4 + j], 0x88);
      t[b + 4 + j] = _mm512_shuffle_f32x4(u[b + j], u[b + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_f32x4(t[j], t[8 + j], 0xdd);
  }
}

void prefill_pack_x(const float* x, int64_t m, int64_t k, bool q8, float* xt, int64_t k0, int64_t k1) {
  const int64_t panels = (m + kPrefillTokens - 1) / kPrefillTokens;
  alignas(64) float xq[kQ8Block];
  // fp32 x, whole blocks of 16 tokens x 16 columns: transposed in registers and stored as
  // whole lines (a scalar store per element, one line each, took ~0.25 ms per 128 x 2048).
  const int64_t full_tokens = q8 ? 0 : m / 16 * 16, c_vec = k0 + (k1 - k0) / 16 * 16;
  for (int64_t t0 = 0; t0 < full_tokens; t0 += 16) {
    float* panel = xt + (t0 / kPrefillTokens) * k * kPrefillTokens + t0 % kPrefillTokens;
    for (int64_t c = k0; c < c_vec; c += 16) {
      __m512 r[16];
      for (int i = 0; i < 16; ++i) r[i] = _mm512_loadu_ps(x + (t0 + i) * k + c);
      prefill_transpose16(r);
      for (int i = 0; i < 16; ++i) _mm512_store_ps(panel + (c + i) * kPrefillTokens, r[i]);
    }
  }
  for (int64_t t = 0; t < panels * kPrefillTokens; ++t) {
    float* col = xt + (t / kPrefillTokens) * k * kPrefillTokens + t % kPrefillTokens;
    if (t >= m) {
      for (int64_t c = k0; c < k1; ++c) col[c * kPrefillTokens] = 0.0f;
      continue;
    }
    const float* row = x + t * k;
    if (!q8) {
      for (int64_t c = t < full_tokens ? c_vec : k0; c < k1; ++c) col[c * kPrefillTokens] = row[c];
      continue;
    }
    for (int64_t c = k0; c < k1; c += kQ8Block) {
      float d;
      const __m256i q = q8_quantize_block(row + c, &d);
      const __m512 dv = _mm512_set1_ps(d);
      _mm512_store_ps(xq, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(q))), dv));
      _mm512_store_ps(xq + 16,
                      _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(q, 1))), dv));
      for (int i = 0; i < kQ8Block; ++i) col[(c + i) * kPrefillTokens] = xq[i];
    }
  }
}

}  // namespace

const PrefillKernels kAvx512Prefill{.pack_x = prefill_pack_x, .rows = prefill_rows};

}  // namespace recur::gemm
