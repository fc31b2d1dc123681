// What the prefill GEMM kernels of every ISA (gemm_prefill_avx512.cc, gemm_prefill_q8_avx512.cc,
// gemm_prefill_avx2.cc) share beyond the intrinsics: the prefetch of the next weight block and the
// transposed store of a finished tile. Include only from those files (internal linkage).
#pragma once

#include <xmmintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"

namespace recur::gemm {
namespace {

// The prefill GEMMs: the next 6-row block's part of W (rows past r + 6 up to r1, else the
// next K block from r0) into L2 while this one computes. Converting or reading a block right
// after its rows miss the caches stalls on DRAM latency: f16 went from 0.66 to 0.74 of the
// FMA peak with this.
inline void prefetch_next_row_block(const void* w, size_t w_row_bytes, WeightFormat f, int64_t k, int64_t r,
                                    int64_t r0, int64_t r1, int64_t k0, int64_t kc) {
  constexpr int64_t kRows = 6;
  const int64_t next = r + kRows < r1 ? r + kRows : k0 + kc < k ? r0 : -1;
  if (next < 0) return;
  const int64_t nk0 = next == r0 && r + kRows >= r1 ? k0 + kc : k0;
  const size_t first = row_bytes(f, nk0), last = row_bytes(f, std::min(k, nk0 + kc));
  for (int64_t i = next; i < std::min(r1, next + kRows); ++i) {
    const char* row = static_cast<const char*>(w) + size_t(i) * w_row_bytes;
    for (size_t b = first; b < last; b += 64) _mm_prefetch(row + b, _MM_HINT_T1);
  }
}

// The prefill GEMMs: a finished tile c[row][token] (ldc floats per row) into y[token][row] (n
// floats per token), stored on the first K block and added after.
inline void store_tile_transposed(const float* c, int ldc, int rows, int tokens, float* y, int64_t n, bool add) {
  for (int t = 0; t < tokens; ++t) {
    float* yt = y + t * n;
    if (add) {
      for (int i = 0; i < rows; ++i) yt[i] += c[i * ldc + t];
    } else {
      for (int i = 0; i < rows; ++i) yt[i] = c[i * ldc + t];
    }
  }
}

// One thread's share of the fp32 prefill GEMM (PrefillArgs), W rows [r0, r1): per K block of
// kPrefillKc and block of 6 rows, the rows as fp32 (f32 read in place, else widen(r, k0, kb,
// out) into a thread-local buffer), the next block's prefetch, then for each X^T panel of
// Tokens tokens tile(w, xt, kb, tokens, c) (c[row][token], Tokens floats per row) and the
// transposed store into y. widen / tile are the ISA's.
template <int Tokens, class Widen, class Tile>
void prefill_rows_loop(const PrefillArgs& a, int64_t r0, int64_t r1, const Widen& widen, const Tile& tile) {
  thread_local std::vector<float> wbuf, zeros;
  alignas(64) float c[kPrefillRows * Tokens];
  const int64_t kc = std::min(kPrefillKc, a.k);
  wbuf.resize(size_t(kPrefillRows * kc));
  zeros.assign(size_t(kc), 0.0f);
  const int64_t panels = (a.m + Tokens - 1) / Tokens;
  for (int64_t k0 = 0; k0 < a.k; k0 += kc) {
    const int64_t kb = std::min(kc, a.k - k0);
    for (int64_t r = r0; r < r1; r += kPrefillRows) {
      const int rows = int(std::min<int64_t>(kPrefillRows, r1 - r));
      const float* w[kPrefillRows];
      for (int i = 0; i < kPrefillRows; ++i) {
        if (i >= rows) {
          w[i] = zeros.data();
        } else if (a.format == WeightFormat::kF32) {
          w[i] = reinterpret_cast<const float*>(static_cast<const uint8_t*>(a.w) + size_t(r + i) * a.w_row_bytes) + k0;
        } else {
          widen(r + i, k0, kb, wbuf.data() + i * kc);
          w[i] = wbuf.data() + i * kc;
        }
      }
      prefetch_next_row_block(a.w, a.w_row_bytes, a.format, a.k, r, r0, r1, k0, kc);
      for (int64_t p = 0; p < panels; ++p) {
        const int tokens = int(std::min<int64_t>(Tokens, a.m - p * Tokens));
        tile(w, a.xt + (p * a.k + k0) * Tokens, kb, tokens, c);
        store_tile_transposed(c, Tokens, rows, tokens, a.y + p * Tokens * a.n + r, a.n, k0 > 0);
      }
    }
  }
}

}  // namespace
}  // namespace recur::gemm
