// quantize_q8_0 against ggml's Q8_0 definition (quantize_row_q8_0_ref), recomputed here
// without recur's fp16 conversion or rounding helpers.
#include "engine/synthetic.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace recur {
namespace {

// The fp16 bits' value, decoded by hand (no infinities or NaNs occur here).
double q8test_fp16_value(uint16_t h) {
  const int exp = (h >> 10) & 31, man = h & 1023;
  const double mag = exp == 0 ? std::ldexp(double(man), -24) : std::ldexp(double(1024 + man), exp - 25);
  return (h & 0x8000) ? -mag : mag;
}

// d rounded to the nearest fp16 value, ties to even (the default FE_TONEAREST of nearbyint),
// including fp16's subnormals (quantum 2^-24) and values that round to zero.
double q8test_round_to_fp16(float d) {
  if (d == 0.0f) return 0.0;
  int e = 0;
  std::frexp(double(d), &e);  // d = m * 2^e with m in [0.5, 1): the leading bit is 2^(e-1)
  const int quantum_exp = std::max(e - 1, -14) - 10;
  return std::ldexp(std::nearbyint(std::ldexp(double(d), -quantum_exp)), quantum_exp);
}

struct Q8Block {
  double scale;
  std::vector<int> quants;
};

// The definition: amax = max|x|, d = amax / 127 in float, id = 1 / d in float (0 when d is 0),
// q = x * id rounded half away from zero (roundf), the scale stored as fp16 of d.
Q8Block q8test_reference(const float* x) {
  float amax = 0;
  for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  Q8Block b{q8test_round_to_fp16(d), {}};
  for (int i = 0; i < 32; ++i) {
    const float v = x[i] * id;
    const double mag = std::floor(std::fabs(double(v)) + 0.5);
    b.quants.push_back(std::isfinite(v) ? int(v < 0 ? -mag : mag) : 0);
  }
  return b;
}

void q8test_expect_matches_reference(const std::vector<float>& x) {
  const std::vector<std::byte> q = quantize_q8_0(x.data(), int64_t(x.size()));
  ASSERT_EQ(q.size(), x.size() / 32 * 34);
  for (size_t b = 0; b < x.size() / 32; ++b) {
    const Q8Block want = q8test_reference(x.data() + b * 32);
    uint16_t d16;
    std::memcpy(&d16, q.data() + b * 34, 2);
    EXPECT_EQ(q8test_fp16_value(d16), want.scale) << "block " << b << " scale bits " << d16;
    for (int i = 0; i < 32; ++i)
      EXPECT_EQ(int(int8_t(q[b * 34 + 2 + size_t(i)])), want.quants[size_t(i)])
          << "block " << b << " value " << i << " x " << x[b * 32 + size_t(i)];
  }
}

TEST(QuantizeQ8_0, TiesRoundAwayFromZeroWithTheUnroundedScale) {
  // amax 127 gives d = 1 and id = 1 exactly, so x * id = k + 0.5 is an exact tie: roundf takes
  // it away from zero (nearbyint would give 0, 2, 2, -2 for 0.5, 1.5, 2.5, -2.5).
  std::vector<float> x(32, 0.0f);
  const float ties[] = {127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 126.5f, -126.5f, 63.5f};
  std::copy(std::begin(ties), std::end(ties), x.begin());
  q8test_expect_matches_reference(x);
  const std::vector<std::byte> q = quantize_q8_0(x.data(), 32);
  EXPECT_EQ(int(int8_t(q[2 + 1])), 1);
  EXPECT_EQ(int(int8_t(q[2 + 3])), 3);
  EXPECT_EQ(int(int8_t(q[2 + 6])), -3);
  EXPECT_EQ(int(int8_t(q[2 + 7])), 127);
}

TEST(QuantizeQ8_0, ZeroTinyAndNegativeAmaxBlocks) {
  std::vector<float> x;
  x.insert(x.end(), 32, 0.0f);  // zero block: scale 0, quants 0
  for (int i = 0; i < 32; ++i) x.push_back(1e-30f * float(i - 16));   // d underflows fp16, id finite
  for (int i = 0; i < 32; ++i) x.push_back(1e-40f * float(i - 16));   // subnormal d: 1 / d is inf
  for (int i = 0; i < 32; ++i) x.push_back(3e-6f * float(i - 16));    // d an fp16 subnormal
  for (int i = 0; i < 32; ++i) x.push_back(i == 5 ? -7.25f : 0.1f * float(i));  // amax from a negative
  for (int i = 0; i < 32; ++i) x.push_back(-60000.0f + 17.0f * float(i));        // large, all negative
  q8test_expect_matches_reference(x);
  const std::vector<std::byte> q = quantize_q8_0(x.data(), int64_t(x.size()));
  EXPECT_EQ(int(int8_t(q[4 * 34 + 2 + 5])), -127);
  for (int i = 0; i < 34; ++i) EXPECT_EQ(int(q[size_t(i)]), 0) << "zero block byte " << i;
}

TEST(QuantizeQ8_0, RandomBlocksMatchTheDefinition) {
  // Gaussian weights as `recur model new` draws them, at several magnitudes: the ~0.7% of
  // quants the old divide-by-fp16-scale rounding changed all show up at this size.
  std::mt19937_64 rng(7);
  std::vector<float> x;
  for (float stddev : {0.02f, 1.0f, 300.0f}) {
    std::normal_distribution<float> dist(0.0f, stddev);
    for (int i = 0; i < 32 * 256; ++i) x.push_back(dist(rng));
  }
  q8test_expect_matches_reference(x);
}

}  // namespace
}  // namespace recur
