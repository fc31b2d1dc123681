// The tile emulator against the Intel SDM's semantics (gemm_amx_tiles.h): int8 dots against
// plain loops, TDPBF16PS's even / odd temporaries, DAZ and FTZ, loads and stores with strides,
// and the limits the hardware faults on.
#include "kernels/gemm/gemm_amx_tiles.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

namespace recur::gemm::amx {
namespace {

uint16_t bf16_bits(float v) { return uint16_t(__builtin_bit_cast(uint32_t, v) >> 16); }  // exact inputs only

TEST(AmxTiles, Int8DotsMatchPlainLoopsForEveryShape) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int rows : {1, 5, 16})
    for (int kd : {1, 3, 16})      // A dwords per row = B rows
      for (int nd : {1, 7, 16}) {  // C / B dwords per row
        EmuTiles tl;
        TileConfig cfg;
        cfg.set(0, rows, 4 * nd), cfg.set(1, rows, 4 * kd), cfg.set(2, kd, 4 * nd);
        tl.configure(cfg);
        std::vector<uint8_t> a(size_t(rows * 4 * kd)), b(size_t(kd * 4 * nd));
        std::vector<int32_t> c0(size_t(rows * nd));
        for (auto& v : a) v = uint8_t(byte(rng));
        for (auto& v : b) v = uint8_t(byte(rng));
        a[0] = 0x80, b[0] = 0x80;  // -128 x -128 signed, 128 x -128 unsigned A
        for (auto& v : c0) v = int32_t(rng());
        for (int form = 0; form < 3; ++form) {
          tl.load(0, c0.data(), 4 * nd);
          tl.load(1, a.data(), 4 * kd);
          tl.load(2, b.data(), 4 * nd);
          if (form == 0) tl.dpbssd(0, 1, 2);
          else if (form == 1) tl.dpbusd(0, 1, 2);
          else tl.dpbsud(0, 1, 2);
          std::vector<int32_t> c(size_t(rows * nd));
          tl.store(0, c.data(), 4 * nd);
          for (int m = 0; m < rows; ++m)
            for (int n = 0; n < nd; ++n) {
              int64_t want = c0[size_t(m * nd + n)];
              for (int k = 0; k < 4 * kd; ++k) {
                const uint8_t x = a[size_t(m * 4 * kd + k)], y = b[size_t((k / 4) * 4 * nd + 4 * n + k % 4)];
                const int xa = form == 1 ? int(x) : int(int8_t(x)), yb = form == 2 ? int(y) : int(int8_t(y));
                want += xa * yb;
              }
              ASSERT_EQ(c[size_t(m * nd + n)], int32_t(uint32_t(uint64_t(want))))
                  << "form " << form << " rows " << rows << " kd " << kd << " nd " << nd << " at " << m << "," << n;
            }
        }
      }
}

// One row, one column: A's pairs against B's pairs, the case where the SDM's two temporaries
// (even and odd elements summed apart, added at the end) differ from one running sum.
float bf16_dot(const std::vector<float>& a, const std::vector<float>& b, float c0) {
  EmuTiles tl;
  TileConfig cfg;
  const int pairs = int(a.size() / 2);
  cfg.set(0, 1, 4), cfg.set(1, 1, 4 * pairs), cfg.set(2, pairs, 4);
  tl.configure(cfg);
  std::vector<uint16_t> ab(a.size()), bb(b.size());
  for (size_t i = 0; i < a.size(); ++i) ab[i] = bf16_bits(a[i]), bb[i] = bf16_bits(b[i]);
  tl.load(0, &c0, 4);
  tl.load(1, ab.data(), 4 * pairs);
  tl.load(2, bb.data(), 4);
  tl.dpbf16ps(0, 1, 2);
  float c;
  tl.store(0, &c, 4);
  return c;
}

TEST(AmxTiles, Bf16KeepsEvenAndOddTemporariesApart) {
  // k = 0: even 2^24, odd 1; k = 1: even -2^24, odd 0. The SDM's temporaries give even 0 and
  // odd 1, so 1; a single running sum would round 2^24 + 1 to 2^24 and give 0.
  EXPECT_EQ(bf16_dot({0x1p24f, 1.0f, -0x1p24f, 0.0f}, {1.0f, 1.0f, 1.0f, 1.0f}, 0.0f), 1.0f);
  // Small integers are exact: sum 1*2 + 3*4 + 5*6 + 7*8 = 100, plus C's 0.5.
  EXPECT_EQ(bf16_dot({1, 3, 5, 7}, {2, 4, 6, 8}, 0.5f), 100.5f);
}

TEST(AmxTiles, Bf16FlushesDenormalInputsAndResults) {
  // DAZ: a denormal bf16 input (2^-130) reads as zero, though its product with 2^100 is normal.
  EXPECT_EQ(bf16_dot({0x1p-130f, 0.0f}, {0x1p100f, 0.0f}, 0.0f), 0.0f);
  // FTZ: 2^-70 x 2^-70 = 2^-140 is denormal in fp32 and is flushed.
  EXPECT_EQ(bf16_dot({0x1p-70f, 0.0f}, {0x1p-70f, 0.0f}, 0.0f), 0.0f);
  // C's denormal input is read as zero too.
  EXPECT_EQ(bf16_dot({0.0f, 0.0f}, {0.0f, 0.0f}, 0x1p-140f), 0.0f);
  // A normal product is kept.
  EXPECT_EQ(bf16_dot({0x1p-60f, 0.0f}, {0x1p-60f, 0.0f}, 0.0f), 0x1p-120f);
}

TEST(AmxTiles, LoadsZeroTheRestAndStoresKeepTheirStride) {
  EmuTiles tl;
  TileConfig cfg;
  cfg.set(0, 3, 8);
  tl.configure(cfg);
  std::vector<uint8_t> src(3 * 20), dst(3 * 20, 0xee);
  for (size_t i = 0; i < src.size(); ++i) src[i] = uint8_t(i);
  tl.load(0, src.data(), 20);
  tl.store(0, dst.data(), 20);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 20; ++c)
      EXPECT_EQ(dst[size_t(r * 20 + c)], c < 8 ? src[size_t(r * 20 + c)] : 0xee) << r << "," << c;
}

// Each breaks one rule; the emulator must fault as the hardware does (#UD).
void configure_17_rows() {
  EmuTiles tl;
  TileConfig cfg;
  cfg.set(0, 17, 64);
  tl.configure(cfg);
}
void configure_68_bytes() {
  EmuTiles tl;
  TileConfig cfg;
  cfg.set(0, 16, 68);
  tl.configure(cfg);
}
void dot_with_mismatched_k() {
  EmuTiles tl;
  TileConfig cfg;
  cfg.set(0, 16, 64);
  cfg.set(1, 16, 64);
  cfg.set(2, 8, 64);  // A has 16 dwords per row, B 8 rows
  tl.configure(cfg);
  tl.dpbssd(0, 1, 2);
}
void zero_before_config() {
  EmuTiles tl;
  tl.zero(0);
}
void zero_tile_8() {
  EmuTiles tl;
  TileConfig cfg;
  cfg.set(0, 16, 64);
  tl.configure(cfg);
  tl.zero(8);
}

TEST(AmxTilesDeathTest, LimitsFaultLikeTheHardware) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(configure_17_rows(), "rows above 16");
  EXPECT_DEATH(configure_68_bytes(), "colsb above 64");
  EXPECT_DEATH(dot_with_mismatched_k(), "A colsb / 4 != B rows");
  EXPECT_DEATH(zero_before_config(), "before LDTILECFG");
  EXPECT_DEATH(zero_tile_8(), "outside 0..7");
}

}  // namespace
}  // namespace recur::gemm::amx
