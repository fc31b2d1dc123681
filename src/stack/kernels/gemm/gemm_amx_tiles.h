// The AMX tile operations the AMX GEMM kernels use (gemm_amx_kernels.h), behind two backends with
// one interface, so the kernel code is written once:
//   EmuTiles  a software emulator of the Intel SDM semantics (this file; runs on any CPU), with
//             the architectural limits checked (8 tiles, 16 rows, 64 bytes per row, palette 1,
//             the shape rules under which TDP* raise #UD);
//   HwTiles   the real instructions (gemm_amx_hw.cc, compiled with -mamx-tile -mamx-int8
//             -mamx-bf16; only called where the CPU, the OS and the user allow it: gemm_amx.h).
//
// Semantics emulated (Intel SDM vol. 2, TDPBSSD/TDPBUSD and TDPBF16PS "Operation", as mirrored by
// felixcloutier.com/x86/tdpbf16ps and /x86/tdpbssd:tdpbsud:tdpbusd:tdpbuud):
//   TDPB[SU]{S,U}D  C[m][n] += sum over k of the 4-byte dot of A row m dword k and B row k dword
//                   n (bytes sign- or zero-extended), int32 with wrap-around;
//   TDPBF16PS       per (m, n): two fp32 temporaries (even / odd bf16 of each pair) start at 0
//                   and take temp += a * b for k in order, each an fp32 FMA with DAZ (denormal
//                   inputs read as zero), FTZ (denormal results flushed to a signed zero) and
//                   round-to-nearest-even; then C[m][n] = C[m][n] + (even + odd), both adds DAZ /
//                   FTZ / RNE. MXCSR is not consulted. One corner is not pinned down by the SDM
//                   text: whether a result that rounds up to the smallest normal counts as tiny.
//                   The emulator flushes by the rounded value.
//   TILELOADD / TILESTORED  rows x colsb bytes with a byte stride; a load zeroes the rest of
//                   each 64-byte row and the rows past `rows` (write_row_and_zero /
//                   zero_upper_rows); LDTILECFG zeroes every tile.
// A broken rule is a bug in a kernel, not bad input: the emulator prints which rule and aborts,
// as the hardware would fault.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace recur::gemm::amx {

inline constexpr int kTiles = 8;
inline constexpr int kMaxRows = 16;
inline constexpr int kMaxColsb = 64;

// Palette 1's configuration: per tile its rows and bytes per row (0 / 0: unused).
struct TileConfig {
  uint8_t rows[kTiles] = {};
  uint16_t colsb[kTiles] = {};
  void set(int tile, int r, int cb) {
    rows[tile] = uint8_t(r);
    colsb[tile] = uint16_t(cb);
  }
  // The 64-byte LDTILECFG image: palette, start_row, 14 reserved, colsb[16] (u16), rows[16].
  void image(uint8_t out[64]) const {
    std::memset(out, 0, 64);
    out[0] = 1;
    for (int t = 0; t < kTiles; ++t) {
      std::memcpy(out + 16 + 2 * t, &colsb[t], 2);
      out[48 + t] = rows[t];
    }
  }
};

[[noreturn]] inline void tile_fault(const char* rule, int a, int b) {
  std::fprintf(stderr, "AMX tile emulator: %s (%d, %d): the hardware raises #UD here; a kernel bug\n", rule, a, b);
  std::abort();
}

class EmuTiles {
 public:
  void configure(const TileConfig& c) {
    for (int t = 0; t < kTiles; ++t) {
      if (c.rows[t] > kMaxRows) tile_fault("tile rows above 16", t, c.rows[t]);
      if (c.colsb[t] > kMaxColsb) tile_fault("tile colsb above 64", t, c.colsb[t]);
      if ((c.rows[t] == 0) != (c.colsb[t] == 0)) tile_fault("tile with rows xor colsb zero", t, c.rows[t]);
    }
    cfg_ = c;
    configured_ = true;
    std::memset(data_, 0, sizeof(data_));
  }
  void release() {
    configured_ = false;
    std::memset(data_, 0, sizeof(data_));
  }

  void load(int t, const void* base, int64_t stride) {
    check_tile(t);
    const auto* p = static_cast<const uint8_t*>(base);
    std::memset(data_[t], 0, sizeof(data_[t]));
    for (int r = 0; r < cfg_.rows[t]; ++r) std::memcpy(data_[t][r], p + r * stride, cfg_.colsb[t]);
  }
  void store(int t, void* base, int64_t stride) const {
    check_tile(t);
    auto* p = static_cast<uint8_t*>(base);
    for (int r = 0; r < cfg_.rows[t]; ++r) std::memcpy(p + r * stride, data_[t][r], cfg_.colsb[t]);
  }
  void zero(int t) {
    check_tile(t);
    std::memset(data_[t], 0, sizeof(data_[t]));
  }

  // The kernels' form (gemm_amx_kernels.h): tile numbers as template arguments, as the real
  // instructions need them encoded.
  template <int T>
  void load(const void* base, int64_t stride) { load(T, base, stride); }
  template <int T>
  void store(void* base, int64_t stride) const { store(T, base, stride); }
  template <int T>
  void zero() { zero(T); }
  template <int C, int A, int B>
  void dpbssd() { dpbssd(C, A, B); }
  template <int C, int A, int B>
  void dpbf16ps() { dpbf16ps(C, A, B); }

  // Signed A bytes x signed B bytes (TDPBSSD), unsigned x signed (TDPBUSD), signed x unsigned.
  void dpbssd(int c, int a, int b) { dp_int8<true, true>(c, a, b); }
  void dpbusd(int c, int a, int b) { dp_int8<false, true>(c, a, b); }
  void dpbsud(int c, int a, int b) { dp_int8<true, false>(c, a, b); }

  void dpbf16ps(int c, int a, int b) {
    check_dp(c, a, b);
    const int pairs = cfg_.colsb[a] / 4, cols = cfg_.colsb[c] / 4;
    for (int m = 0; m < cfg_.rows[c]; ++m) {
      float temp[2 * (kMaxColsb / 4)] = {};
      for (int k = 0; k < pairs; ++k)
        for (int n = 0; n < cols; ++n)
          for (int e = 0; e < 2; ++e)
            temp[2 * n + e] = ftz(std::fma(bf16_daz(a, m, 2 * k + e), bf16_daz(b, k, 2 * n + e), temp[2 * n + e]));
      for (int n = 0; n < cols; ++n) {
        float d;
        std::memcpy(&d, &data_[c][m][4 * n], 4);
        const float sum = ftz(temp[2 * n] + temp[2 * n + 1]);
        d = ftz(daz(d) + sum);
        std::memcpy(&data_[c][m][4 * n], &d, 4);
      }
    }
  }

 private:
  void check_tile(int t) const {
    if (!configured_) tile_fault("tile instruction before LDTILECFG", t, 0);
    if (t < 0 || t >= kTiles) tile_fault("tile index outside 0..7", t, 0);
    if (cfg_.rows[t] == 0) tile_fault("tile not configured", t, 0);
  }
  // The #UD rules of TDPBSSD / TDPBF16PS: distinct tiles, dword columns, A's rows = C's rows,
  // A's dwords per row = B's rows, B's row bytes = C's row bytes.
  void check_dp(int c, int a, int b) const {
    check_tile(c), check_tile(a), check_tile(b);
    if (c == a || c == b || a == b) tile_fault("TDP* with repeated tiles", c, a == b ? a : b);
    if (cfg_.colsb[c] % 4 || cfg_.colsb[a] % 4 || cfg_.colsb[b] % 4) tile_fault("colsb not a multiple of 4", c, a);
    if (cfg_.rows[a] != cfg_.rows[c]) tile_fault("A rows != C rows", cfg_.rows[a], cfg_.rows[c]);
    if (cfg_.colsb[a] / 4 != cfg_.rows[b]) tile_fault("A colsb / 4 != B rows", cfg_.colsb[a], cfg_.rows[b]);
    if (cfg_.colsb[b] != cfg_.colsb[c]) tile_fault("B colsb != C colsb", cfg_.colsb[b], cfg_.colsb[c]);
  }

  template <bool ASigned, bool BSigned>
  void dp_int8(int c, int a, int b) {
    check_dp(c, a, b);
    const int dwords = cfg_.colsb[a] / 4, cols = cfg_.colsb[c] / 4;
    for (int m = 0; m < cfg_.rows[c]; ++m)
      for (int k = 0; k < dwords; ++k)
        for (int n = 0; n < cols; ++n) {
          uint32_t acc;
          std::memcpy(&acc, &data_[c][m][4 * n], 4);
          for (int i = 0; i < 4; ++i) {
            const uint8_t x = data_[a][m][4 * k + i], y = data_[b][k][4 * n + i];
            const int32_t xv = ASigned ? int32_t(int8_t(x)) : int32_t(x);
            const int32_t yv = BSigned ? int32_t(int8_t(y)) : int32_t(y);
            acc += uint32_t(xv * yv);  // int32 wrap-around, as the hardware adds
          }
          std::memcpy(&data_[c][m][4 * n], &acc, 4);
        }
  }

  static float daz(float v) { return std::fpclassify(v) == FP_SUBNORMAL ? std::copysign(0.0f, v) : v; }
  static float ftz(float v) { return daz(v); }
  float bf16_daz(int t, int row, int element) const {
    uint16_t h;
    std::memcpy(&h, &data_[t][row][2 * element], 2);
    return daz(__builtin_bit_cast(float, uint32_t(h) << 16));
  }

  TileConfig cfg_;
  bool configured_ = false;
  alignas(64) uint8_t data_[kTiles][kMaxRows][kMaxColsb] = {};
};

}  // namespace recur::gemm::amx
