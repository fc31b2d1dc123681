// The AMX GEMM kernels, written once against the tile layer (gemm_amx_tiles.h) and instantiated
// for the emulator (gemm_amx_emu.cc) and for the hardware (gemm_amx_hw.cc). Tokens are the tiles'
// rows (A: 16 tokens of activations), weight rows their columns (B: 16 rows of a 16-row group in
// the VNNI pair / quad layout gemm_amx.cc repacks into), so C[token][row] is y's layout.
// Everything outside the tiles is plain C++ (std::fma where the fp32 paths fuse), so the
// emulator's and the hardware's epilogues are the same arithmetic.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>

#include "kernels/gemm/gemm_amx_tiles.h"

namespace recur::gemm::amx {

inline constexpr int kRows = 16;             // tokens per A tile, weight rows per B tile / group
inline constexpr int kQ8Quads = 8;           // 4-byte k groups per Q8_0 block of 32
inline constexpr int kQ8TileBytes = 512;     // one block of one group: [8 quads][16 rows][4]
inline constexpr int kI8Step = 64;           // k per W8A8 step: [16 quads][16 rows][4]
inline constexpr int kBf16Step = 32;         // k per bf16 step: [16 pairs][16 rows][2 bf16]
inline constexpr int64_t kQ8KBlock = 1024;   // the VNNI prefill's K block (kPrefillKc)

// Q8_0 x Q8_0: y[t][r] = per chain of `chain_blocks` 32-blocks, sum over its blocks b in order of
// fma(float(dot_b), d_x * d_w, acc), the chains' sums added to y in order. Chains of 32 blocks
// (K = 1024) are the VNNI row-layout prefill's arithmetic (gemm_prefill_q8_avx512.cc), one chain
// over the whole K the 16-row groups' (gemm_q8r16.cc): so the bits of either.
struct Q8Args {
  int64_t k = 0;               // multiple of 32
  int64_t chain_blocks = kQ8KBlock / 32;
  int64_t m = 0, n = 0;        // valid tokens / rows (y's extent)
  int64_t m_pad = 0;           // tokens in xq / dx, a multiple of 16 (zero past m)
  const int8_t* xq = nullptr;  // [m_pad][k] quantized x
  const float* dx = nullptr;   // [m_pad][k / 32] its block scales
  const int8_t* wq = nullptr;  // [group][block] 512-byte B tiles of signed q
  const float* dw = nullptr;   // [group][block][16] d_w as fp32
  float* y = nullptr;
  int64_t ldy = 0;
};

// W8A8: y[t][r] = float(double(sum_k xq wq) * double(xs[t]) * double(ws[r])), the int32 sum over
// the whole K in the C tile — store_i8's arithmetic (gemm_dot_impl.h), so the same bits.
struct I8Args {
  int64_t k_pad = 0;  // multiple of 64 (zero past k)
  int64_t m = 0, n = 0, m_pad = 0;
  const int8_t* xq = nullptr;  // [m_pad][k_pad]
  const float* xs = nullptr;   // [m_pad]
  const int8_t* wq = nullptr;  // [group][k_pad / 64] 1024-byte B tiles
  const float* ws = nullptr;   // [n_pad]
  float* y = nullptr;
  int64_t ldy = 0;
};

// bf16 parts: y[t][r] = big + small, big the C tile of x part 0 . w part 0, small that of the
// other products the precision keeps (each TDPBF16PS accumulates in fp32 over the whole K).
struct Bf16Product {
  int x_part, w_part;
  bool small;
};
struct Bf16Args {
  int64_t k_pad = 0;  // multiple of 32 (zero past k)
  int64_t m = 0, n = 0, m_pad = 0;
  const uint16_t* x[3] = {};  // parts, each [m_pad][k_pad] bf16
  const uint16_t* w[3] = {};  // parts, each [group][k_pad / 32] 1024-byte B tiles
  const Bf16Product* products = nullptr;
  int product_count = 0;
  float* y = nullptr;
  int64_t ldy = 0;
};

template <class Tiles>
struct Kernels {
  // ---- Q8_0: C tiles 0..3 (2 token tiles x 2 groups), A 4..5, B 6..7; K = 32 per step ----
  template <int MT, int NT>
  static void q8_block(Tiles& tl, const Q8Args& a, int64_t t0, int64_t g0) {
    const int64_t blocks = a.k / 32;
    alignas(64) int32_t c[4][kRows * kRows];
    alignas(64) float acc[4][kRows * kRows];
    for (int64_t b0 = 0; b0 < blocks; b0 += a.chain_blocks) {
      const int64_t b1 = std::min(blocks, b0 + a.chain_blocks);
      std::fill(&acc[0][0], &acc[0][0] + 4 * kRows * kRows, 0.0f);
      for (int64_t b = b0; b < b1; ++b) {
        tl.template zero<0>();
        tl.template load<4>(a.xq + t0 * a.k + b * 32, a.k);
        tl.template load<6>(a.wq + (g0 * blocks + b) * kQ8TileBytes, 64);
        tl.template dpbssd<0, 4, 6>();
        if constexpr (NT > 1) {
          tl.template zero<1>();
          tl.template load<7>(a.wq + ((g0 + 1) * blocks + b) * kQ8TileBytes, 64);
          tl.template dpbssd<1, 4, 7>();
        }
        if constexpr (MT > 1) {
          tl.template zero<2>();
          tl.template load<5>(a.xq + (t0 + kRows) * a.k + b * 32, a.k);
          tl.template dpbssd<2, 5, 6>();
          if constexpr (NT > 1) {
            tl.template zero<3>();
            tl.template dpbssd<3, 5, 7>();
          }
        }
        tl.template store<0>(c[0], 64);
        if constexpr (NT > 1) tl.template store<1>(c[1], 64);
        if constexpr (MT > 1) tl.template store<2>(c[2], 64);
        if constexpr (MT > 1 && NT > 1) tl.template store<3>(c[3], 64);
        for (int i = 0; i < MT; ++i)
          for (int j = 0; j < NT; ++j) {
            const float* dw = a.dw + ((g0 + j) * blocks + b) * kRows;
            const int s = 2 * i + j;
            for (int t = 0; t < kRows; ++t) {
              const float dx = a.dx[(t0 + kRows * i + t) * blocks + b];
              for (int r = 0; r < kRows; ++r)
                acc[s][t * kRows + r] = std::fma(float(c[s][t * kRows + r]), dx * dw[r], acc[s][t * kRows + r]);
            }
          }
      }
      for (int i = 0; i < MT; ++i)
        for (int j = 0; j < NT; ++j) write_out(a.y, a.ldy, a.m, a.n, t0 + kRows * i, (g0 + j) * kRows, acc[2 * i + j], b0 > 0);
    }
  }

  static void q8_groups(const Q8Args& a, int64_t g0, int64_t g1) {
    Tiles tl;
    TileConfig cfg;
    for (int t = 0; t < 4; ++t) cfg.set(t, kRows, 64);
    cfg.set(4, kRows, 32), cfg.set(5, kRows, 32);
    cfg.set(6, kQ8Quads, 64), cfg.set(7, kQ8Quads, 64);
    tl.configure(cfg);
    over_tile_pairs(a.m_pad, g0, g1, [&]<int MT, int NT>(int64_t t0, int64_t g) { q8_block<MT, NT>(tl, a, t0, g); });
    tl.release();
  }

  // ---- W8A8: the same tile plan, K = 64 per step, the int32 sums kept in C over all K ----
  template <int MT, int NT>
  static void i8_block(Tiles& tl, const I8Args& a, int64_t t0, int64_t g0) {
    const int64_t steps = a.k_pad / kI8Step;
    tl.template zero<0>();
    if constexpr (NT > 1) tl.template zero<1>();
    if constexpr (MT > 1) tl.template zero<2>();
    if constexpr (MT > 1 && NT > 1) tl.template zero<3>();
    for (int64_t s = 0; s < steps; ++s) {
      tl.template load<4>(a.xq + t0 * a.k_pad + s * kI8Step, a.k_pad);
      tl.template load<6>(a.wq + (g0 * steps + s) * 1024, 64);
      tl.template dpbssd<0, 4, 6>();
      if constexpr (NT > 1) {
        tl.template load<7>(a.wq + ((g0 + 1) * steps + s) * 1024, 64);
        tl.template dpbssd<1, 4, 7>();
      }
      if constexpr (MT > 1) {
        tl.template load<5>(a.xq + (t0 + kRows) * a.k_pad + s * kI8Step, a.k_pad);
        tl.template dpbssd<2, 5, 6>();
        if constexpr (NT > 1) tl.template dpbssd<3, 5, 7>();
      }
    }
    alignas(64) int32_t c[kRows * kRows];
    for (int i = 0; i < MT; ++i)
      for (int j = 0; j < NT; ++j) {
        const int tile = 2 * i + j;
        if (tile == 0) tl.template store<0>(c, 64);
        else if (tile == 1) tl.template store<1>(c, 64);
        else if (tile == 2) tl.template store<2>(c, 64);
        else tl.template store<3>(c, 64);
        for (int t = 0; t < kRows; ++t) {
          const int64_t tok = t0 + kRows * i + t;
          if (tok >= a.m) break;
          for (int r = 0; r < kRows; ++r) {
            const int64_t row = (g0 + j) * kRows + r;
            if (row >= a.n) break;
            a.y[tok * a.ldy + row] = float(double(c[t * kRows + r]) * double(a.xs[tok]) * double(a.ws[row]));
          }
        }
      }
  }

  static void i8_groups(const I8Args& a, int64_t g0, int64_t g1) {
    Tiles tl;
    TileConfig cfg;
    for (int t = 0; t < kTiles; ++t) cfg.set(t, kRows, 64);
    tl.configure(cfg);
    over_tile_pairs(a.m_pad, g0, g1, [&]<int MT, int NT>(int64_t t0, int64_t g) { i8_block<MT, NT>(tl, a, t0, g); });
    tl.release();
  }

  // The int8 kernels' walk: groups in pairs, token tiles in pairs, block<MT, NT>(t0, g) for each
  // (1 or 2 token tiles x 1 or 2 groups at the edges).
  template <class Block>
  static void over_tile_pairs(int64_t m_pad, int64_t g0, int64_t g1, const Block& block) {
    for (int64_t g = g0; g < g1; g += 2) {
      const bool two_groups = g + 1 < g1;
      for (int64_t t0 = 0; t0 < m_pad; t0 += 2 * kRows) {
        const bool two_tiles = t0 + kRows < m_pad;
        if (two_tiles && two_groups) block.template operator()<2, 2>(t0, g);
        else if (two_tiles) block.template operator()<2, 1>(t0, g);
        else if (two_groups) block.template operator()<1, 2>(t0, g);
        else block.template operator()<1, 1>(t0, g);
      }
    }
  }

  // ---- bf16 parts: C big 0, C small 1, A parts 2..4, B parts 5..7; K = 32 per step ----
  template <int XP, int WP>
  static void bf16_dp(Tiles& tl, bool small) {
    if (small) tl.template dpbf16ps<1, 2 + XP, 5 + WP>();
    else tl.template dpbf16ps<0, 2 + XP, 5 + WP>();
  }
  static void bf16_product(Tiles& tl, const Bf16Product& p) {
    switch (p.x_part * 3 + p.w_part) {
      case 0: bf16_dp<0, 0>(tl, p.small); break;
      case 1: bf16_dp<0, 1>(tl, p.small); break;
      case 2: bf16_dp<0, 2>(tl, p.small); break;
      case 3: bf16_dp<1, 0>(tl, p.small); break;
      case 4: bf16_dp<1, 1>(tl, p.small); break;
      case 5: bf16_dp<1, 2>(tl, p.small); break;
      case 6: bf16_dp<2, 0>(tl, p.small); break;
      case 7: bf16_dp<2, 1>(tl, p.small); break;
      default: bf16_dp<2, 2>(tl, p.small); break;
    }
  }
  template <int P>
  static void bf16_load_part(Tiles& tl, const Bf16Args& a, int64_t t0, int64_t g, int64_t s, bool x_used, bool w_used) {
    const int64_t steps = a.k_pad / kBf16Step;
    if (x_used) tl.template load<2 + P>(a.x[P] + t0 * a.k_pad + s * kBf16Step, a.k_pad * 2);
    if (w_used) tl.template load<5 + P>(a.w[P] + (g * steps + s) * 512, 64);
  }

  static void bf16_groups(const Bf16Args& a, int64_t g0, int64_t g1) {
    Tiles tl;
    TileConfig cfg;
    for (int t = 0; t < kTiles; ++t) cfg.set(t, kRows, 64);
    tl.configure(cfg);
    bool x_used[3] = {}, w_used[3] = {};
    for (int p = 0; p < a.product_count; ++p) x_used[a.products[p].x_part] = w_used[a.products[p].w_part] = true;
    const int64_t steps = a.k_pad / kBf16Step;
    alignas(64) float big[kRows * kRows], small[kRows * kRows];
    for (int64_t g = g0; g < g1; ++g)
      for (int64_t t0 = 0; t0 < a.m_pad; t0 += kRows) {
        tl.template zero<0>();
        tl.template zero<1>();
        for (int64_t s = 0; s < steps; ++s) {
          bf16_load_part<0>(tl, a, t0, g, s, x_used[0], w_used[0]);
          bf16_load_part<1>(tl, a, t0, g, s, x_used[1], w_used[1]);
          bf16_load_part<2>(tl, a, t0, g, s, x_used[2], w_used[2]);
          for (int p = 0; p < a.product_count; ++p) bf16_product(tl, a.products[p]);
        }
        tl.template store<0>(big, 64);
        tl.template store<1>(small, 64);
        for (int i = 0; i < kRows * kRows; ++i) big[i] += small[i];
        write_out(a.y, a.ldy, a.m, a.n, t0, g * kRows, big, false);
      }
    tl.release();
  }

  // c[t][r] of one 16 x 16 tile into y (stored, or added for K blocks after the first).
  static void write_out(float* y, int64_t ldy, int64_t m, int64_t n, int64_t t0, int64_t r0, const float* c,
                        bool add) {
    for (int t = 0; t < kRows && t0 + t < m; ++t) {
      float* yt = y + (t0 + t) * ldy + r0;
      const int rows = int(std::min<int64_t>(kRows, n - r0));
      if (add) {
        for (int r = 0; r < rows; ++r) yt[r] += c[t * kRows + r];
      } else {
        for (int r = 0; r < rows; ++r) yt[r] = c[t * kRows + r];
      }
    }
  }
};

// The kernels of one backend, as the driver (gemm_amx.cc) calls them.
struct KernelTable {
  void (*q8)(const Q8Args&, int64_t g0, int64_t g1) = nullptr;
  void (*i8)(const I8Args&, int64_t g0, int64_t g1) = nullptr;
  void (*bf16)(const Bf16Args&, int64_t g0, int64_t g1) = nullptr;
};
extern const KernelTable kEmulatorKernels;
extern const KernelTable kHardwareKernels;

}  // namespace recur::gemm::amx
