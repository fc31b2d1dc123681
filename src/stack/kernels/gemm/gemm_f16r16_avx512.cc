// F16 in groups of 16 rows (gemm.h, WeightFormat::kF16R16) on AVX-512: per k one 32-byte load
// widened to 16 rows' fp32 in one zmm, times x[k] broadcast, into accumulator k % 4 — the scalar
// kernel's order per lane, so its bits. One token: kernel.gemv.streams groups at a time (on the
// Xeon two streams read at 1.07 of a one-stream sum-read on one core, one at 0.86; on Zen 4 one
// stream is the faster). Several tokens: tiles of up to 4 tokens per
// group (16 accumulators); from 8 tokens on, each group is first widened to fp32 in a
// per-thread buffer, so the tiles spend no conversion per k (5 uops per 4 FMAs become 4), and
// walked in blocks of 256 k that stay in L1 while all token tiles pass.
#include <algorithm>

#include "core/aligned_buffer.h"

#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_simd_avx512.h"

namespace recur::gemm {
namespace {

// One k of 16 rows as fp32: widened from an fp16 group, or read from a widened one.
inline __m512 load_k(const uint16_t* group, int64_t c) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(group + c * kQ8R16Rows)));
}
inline __m512 load_k(const float* group, int64_t c) { return _mm512_load_ps(group + c * kQ8R16Rows); }

// Tokens [t0, t0 + T) against NG consecutive groups starting at `groups` (fp16, or one widened
// fp32 group), over k in [c0, c1) (c0 a multiple of 4). The accumulators start from `state`
// (4 zmm per token and group) or zero, and end in `state`, or reduced into y (y0 = a.y + the
// first group's first row): splitting k this way keeps each lane's order.
template <int T, int NG, class W>
inline void f16r16_tile(const F16R16Args& a, const W* groups, float* y0, int64_t t0, int64_t c0, int64_t c1,
                        __m512* state) {
  const size_t group = size_t(kQ8R16Rows) * size_t(a.k);
  const float* x = a.x + t0 * a.k;
  __m512 acc[NG][T][4];
  for (int i = 0; i < NG; ++i)
    for (int t = 0; t < T; ++t)
      for (int u = 0; u < 4; ++u) acc[i][t][u] = c0 == 0 ? _mm512_setzero_ps() : state[(i * T + t) * 4 + u];
  auto step = [&](int64_t c, int u) {
    for (int i = 0; i < NG; ++i) {
      const __m512 w = load_k(groups + i * group, c);
      for (int t = 0; t < T; ++t) acc[i][t][u] = _mm512_fmadd_ps(w, _mm512_set1_ps(x[t * a.k + c]), acc[i][t][u]);
    }
  };
  int64_t c = c0;
  for (; c + 4 <= c1; c += 4) {
    step(c, 0);
    step(c + 1, 1);
    step(c + 2, 2);
    step(c + 3, 3);
  }
  for (; c < c1; ++c) step(c, int(c % 4));
  for (int i = 0; i < NG; ++i)
    for (int t = 0; t < T; ++t) {
      if (c1 < a.k) {
        for (int u = 0; u < 4; ++u) state[(i * T + t) * 4 + u] = acc[i][t][u];
        continue;
      }
      _mm512_storeu_ps(y0 + (t0 + t) * a.ldy + i * kQ8R16Rows,
                       _mm512_add_ps(_mm512_add_ps(acc[i][t][0], acc[i][t][1]), _mm512_add_ps(acc[i][t][2], acc[i][t][3])));
    }
}

template <int T, int NG, class W>
inline void f16r16_whole(const F16R16Args& a, const W* groups, float* y0, int64_t t0) {
  f16r16_tile<T, NG, W>(a, groups, y0, t0, 0, a.k, nullptr);
}

// All tokens against one group, k in blocks of kc: each block of the group (kc x 64 bytes,
// widened) stays in L1 while every token tile passes over it, the tiles' accumulators parked in
// `state` between blocks.
template <class W>
void token_tiles(const F16R16Args& a, const W* group, float* y0, int64_t kc, __m512* state) {
  using TileFn = void (*)(const F16R16Args&, const W*, float*, int64_t, int64_t, int64_t, __m512*);
  static constexpr TileFn kTiles[] = {f16r16_tile<1, 1, W>, f16r16_tile<2, 1, W>, f16r16_tile<3, 1, W>,
                                      f16r16_tile<4, 1, W>};
  // Tokens in blocks of kTokenBlock, so a block's parked accumulators (8 KiB) and the weight
  // block (16 KiB) share L1; all tokens at once measured 0.8x at m = 231.
  constexpr int64_t kTokenBlock = 32;
  for (int64_t b0 = 0; b0 < a.m; b0 += kTokenBlock)
    for (int64_t c0 = 0; c0 < a.k; c0 += kc)
      for (int64_t t0 = b0; t0 < std::min(a.m, b0 + kTokenBlock); t0 += 4)
        kTiles[std::min<int64_t>(4, a.m - t0) - 1](a, group, y0, t0, c0, std::min(a.k, c0 + kc), state + t0 * 4);
}

constexpr int64_t kWidenFromTokens = 8;
constexpr int64_t kPrefillKBlock = 256;  // 16 KiB of widened weights

void avx512_groups(const F16R16Args& a, int64_t g0, int64_t g1) {
  const size_t group = size_t(kQ8R16Rows) * size_t(a.k);
  if (a.m == 1) {
    int64_t g = g0;
    if (a.streams == 4)
      for (; g + 4 <= g1; g += 4) f16r16_whole<1, 4>(a, a.w + g * group, a.y + g * kQ8R16Rows, 0);
    if (a.streams != 1)
      for (; g + 2 <= g1; g += 2) f16r16_whole<1, 2>(a, a.w + g * group, a.y + g * kQ8R16Rows, 0);
    for (; g < g1; ++g) f16r16_whole<1, 1>(a, a.w + g * group, a.y + g * kQ8R16Rows, 0);
    return;
  }
  if (a.m < kWidenFromTokens) {
    for (int64_t g = g0; g < g1; ++g) token_tiles(a, a.w + g * group, a.y + g * kQ8R16Rows, a.k, nullptr);
    return;
  }
  // Per thread: the widened group, and 4 accumulators per token.
  thread_local AlignedBuffer buffer;
  const size_t bytes = (group + size_t(a.m) * 4 * 16) * sizeof(float);
  if (buffer.size() < bytes) buffer = AlignedBuffer(bytes);
  auto* widened = reinterpret_cast<float*>(buffer.data());
  auto* state = reinterpret_cast<__m512*>(widened + group);
  for (int64_t g = g0; g < g1; ++g) {
    const uint16_t* src = a.w + g * group;
    for (size_t i = 0; i < group; i += 16)
      _mm512_store_ps(widened + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
    token_tiles(a, static_cast<const float*>(widened), a.y + g * kQ8R16Rows, kPrefillKBlock, state);
  }
}

}  // namespace

const F16R16Fn kAvx512F16R16 = avx512_groups;

}  // namespace recur::gemm
