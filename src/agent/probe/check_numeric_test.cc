#include "probe/check_numeric.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "probe/check_inputs.h"

namespace recur::probe {
namespace {

TEST(CheckNumeric, UlpDistanceCountsRepresentableSteps) {
  const float one = 1.0f;
  EXPECT_EQ(ulp_distance(DType::kF32, one, one), 0);
  EXPECT_EQ(ulp_distance(DType::kF32, one, std::nextafter(one, 2.0f)), 1);
  EXPECT_EQ(ulp_distance(DType::kF32, one, std::nextafter(std::nextafter(one, 0.0f), 0.0f)), 2);
  // Across zero: the smallest subnormals on each side are 2 steps apart.
  const float tiny = std::numeric_limits<float>::denorm_min();
  EXPECT_EQ(ulp_distance(DType::kF32, tiny, -tiny), 2);
  EXPECT_EQ(ulp_distance(DType::kF64, 1.0, std::nextafter(1.0, 2.0)), 1);
  // bf16 has 8 significant bits: 1 + 2^-7 is the next value after 1.
  EXPECT_EQ(ulp_distance(DType::kBF16, 1.0, 1.0 + 0x1.0p-7), 1);
  EXPECT_EQ(ulp_distance(DType::kF16, 1.0, 1.0 + 0x1.0p-10), 1);
  EXPECT_EQ(ulp_distance(DType::kF32, std::nan(""), 1.0), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(ulp_distance(DType::kI32, 5, 9), 4);
}

TEST(CheckNumeric, RoundingMatchesTheFormats) {
  EXPECT_EQ(round_to(DType::kBF16, 1.0 + 0x1.0p-8), 1.0);              // tie to even
  EXPECT_EQ(round_to(DType::kBF16, 1.0 + 3 * 0x1.0p-9), 1.0 + 0x1.0p-7);
  EXPECT_EQ(round_to(DType::kF16, 65504.0), 65504.0);
  EXPECT_TRUE(std::isinf(round_to(DType::kF16, 70000.0)));
  EXPECT_EQ(round_to(DType::kF16, 0x1.0p-24), 0x1.0p-24);               // smallest subnormal
  EXPECT_EQ(round_to(DType::kF16, 1.0 + 0x1.0p-11), 1.0);               // tie to even
  EXPECT_EQ(round_to(DType::kI8, 300.0), 127.0);
  EXPECT_EQ(round_to(DType::kF32, 0.1), double(0.1f));
}

TEST(CheckNumeric, SentinelsAreRecognisedAndDistinctFromComputedNaNs) {
  for (DType t : {DType::kF64, DType::kF32, DType::kBF16, DType::kF16}) {
    alignas(8) unsigned char buf[32];
    fill_sentinel(t, buf, 2);
    EXPECT_TRUE(is_sentinel(t, buf, 1));
    double nan = std::numeric_limits<double>::quiet_NaN();
    store_from_double(t, &nan, buf, 1);
    EXPECT_FALSE(is_sentinel(t, buf, 0)) << dtype_name(t);
    EXPECT_TRUE(std::isnan(load_as_double(t, buf, 1)));
  }
  EXPECT_NE(checksum_bytes("abc", 3), checksum_bytes("abd", 3));
}

TEST(CheckInputs, DistributionsHaveTheirStatedShape) {
  std::vector<double> v(4096);
  generate_values(Distribution::kUniform, 1, 0, DType::kF32, v);
  for (double x : v) EXPECT_TRUE(x >= -1 && x < 1);
  generate_values(Distribution::kWideRange, 1, 0, DType::kF32, v);
  double lo = 1e300, hi = 0;
  for (double x : v) lo = std::min(lo, std::fabs(x)), hi = std::max(hi, std::fabs(x));
  EXPECT_LT(lo, 1e-4);
  EXPECT_GT(hi, 1e4);
  generate_values(Distribution::kCancellation, 1, 0, DType::kF32, v);
  for (size_t i = 0; i < v.size(); i += 2) EXPECT_LT(std::fabs(v[i] + v[i + 1]), 0x1.0p-9 * std::fabs(v[i]));
  std::vector<double> again(4096);
  generate_values(Distribution::kCancellation, 1, 0, DType::kF32, again);
  EXPECT_EQ(v, again);  // deterministic
  generate_values(Distribution::kCancellation, 2, 0, DType::kF32, again);
  EXPECT_NE(v, again);  // fresh per seed
  generate_values(Distribution::kNormal, 3, 0, DType::kF32, v);
  double mean = 0, var = 0;
  for (double x : v) mean += x / double(v.size());
  for (double x : v) var += (x - mean) * (x - mean) / double(v.size());
  EXPECT_NEAR(mean, 0, 0.06);
  EXPECT_NEAR(var, 1, 0.08);
  EXPECT_EQ(parse_distribution("wide_range"), Distribution::kWideRange);
  EXPECT_FALSE(parse_distribution("cauchy"));
}

}  // namespace
}  // namespace recur::probe
