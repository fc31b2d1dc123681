// The int8 dot kernels of every path, called directly with adversarial operands: activations
// of -128 and 127 against weights of +-127. For the AVX2 path these are the pairs on which a
// naive vpmaddubsw of (x + 128) and w saturates at int16 (2 * 255 * 127 > 32767); the sign
// trick must keep the sum exact. With unit scales the result must equal the integer dot
// product exactly (|sum| < 2^24, so it is exact in fp32).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/cpu_features.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"

namespace recur::gemm {
namespace {

void check_exact(const std::vector<int8_t>& x, const std::vector<int8_t>& w, int64_t m, int64_t n, int64_t k) {
  std::vector<int32_t> comp(static_cast<size_t>(n));
  for (int64_t r = 0; r < n; ++r) {
    int32_t s = 0;
    for (int64_t c = 0; c < k; ++c) s += w[size_t(r * k + c)];
    comp[size_t(r)] = 128 * s;
  }
  std::vector<float> ones(size_t(std::max(m, n)), 1.0f);
  for (Isa isa : runnable_isas()) {
    std::vector<float> y(size_t(m * n), -1.0f);
    DotArgs a{.k = k, .m0 = 0, .m1 = m, .n0 = 0, .n1 = n, .k0 = 0, .k1 = k, .x = x.data(), .w = w.data(),
              .x_scale = ones.data(), .w_scale = ones.data(), .w_comp = comp.data(), .y = y.data(), .ldy = n};
    dot_kernels(isa).i8(a);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        int64_t s = 0;
        for (int64_t c = 0; c < k; ++c) s += int64_t(x[size_t(i * k + c)]) * w[size_t(j * k + c)];
        ASSERT_EQ(y[size_t(i * n + j)], float(s)) << isa_name(isa) << " m" << i << " n" << j << " K" << k;
      }
    }
  }
}

TEST(GemmW8A8, ExtremeOperandsAreExactOnEveryPath) {
  for (int64_t k : {1, 2, 31, 32, 33, 64, 100, 1000}) {
    const int64_t m = 3, n = 5;
    std::vector<int8_t> x(size_t(m * k)), w(size_t(n * k));
    for (int64_t c = 0; c < k; ++c) {
      x[size_t(c)] = -128;                         // row 0: all -128
      x[size_t(k + c)] = 127;                      // row 1: all 127
      x[size_t(2 * k + c)] = c % 2 ? 127 : -128;   // row 2: alternating
      w[size_t(c)] = -127;                         // W row 0: all -127
      w[size_t(k + c)] = 127;                      // W row 1: all 127
      w[size_t(2 * k + c)] = c % 2 ? 127 : -127;   // alternating, in phase with x row 2
      w[size_t(3 * k + c)] = c % 2 ? -127 : 127;   // alternating, out of phase
      w[size_t(4 * k + c)] = 0;
    }
    // The data is adversarial: for x = 127, w = 127 the naive unsigned form (x + 128) · w pairs
    // sum to 2 · 255 · 127 = 64770, far past int16.
    static_assert(2 * 255 * 127 > 32767);
    check_exact(x, w, m, n, k);
  }
}

TEST(GemmW8A8, RandomOperandsAreExactOnEveryPath) {
  std::mt19937 rng(9);
  std::uniform_int_distribution<int> xd(-128, 127), wd(-127, 127);
  for (int64_t k : {7, 65, 777}) {
    const int64_t m = 6, n = 9;
    std::vector<int8_t> x(size_t(m * k)), w(size_t(n * k));
    for (auto& v : x) v = int8_t(xd(rng));
    for (auto& v : w) v = int8_t(wd(rng));
    check_exact(x, w, m, n, k);
  }
}

// Weights read in place (gemm_w8a8_stored, the engine's W8A8 files) compute what gemm() does on
// the same int8 rows and scales packed by PackedWeights: the same bits, for decode and prefill
// m, with the compensation from w8a8_compensation.
TEST(GemmW8A8, StoredWeightsMatchPackedBits) {
  std::mt19937 rng(11);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  const int64_t n = 13, k = 70;
  std::vector<float> w(size_t(n * k));
  for (auto& v : w) v = dist(rng);
  auto packed = PackedWeights::pack(w, n, k, Precision::kW8A8);
  ASSERT_TRUE(packed.has_value());
  const auto* q = static_cast<const int8_t*>(packed->hi());
  std::vector<int32_t> comp(static_cast<size_t>(n));
  w8a8_compensation(q, n, k, comp.data());
  for (int64_t r = 0; r < n; ++r) EXPECT_EQ(comp[size_t(r)], packed->comp()[r]);
  const W8A8View view{.n = n, .k = k, .q = q, .scales = packed->scales(), .comp = comp.data()};
  for (Isa isa : runnable_isas()) {
    ScopedIsaCap cap(isa);
    for (int64_t m : {1, 3, 17}) {  // one-row tiles for decode m, 4-row tiles above 8
      std::vector<float> x(size_t(m * k)), want(size_t(m * n)), got(size_t(m * n));
      for (auto& v : x) v = dist(rng);
      Workspace ws;
      ASSERT_TRUE(gemm(*packed, x.data(), m, want.data(), Options{}, nullptr, ws).has_value());
      ASSERT_TRUE(gemm_w8a8_stored(view, x.data(), m, got.data(), nullptr).has_value());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i], want[i]) << isa_name(isa) << " m " << m << " i " << i;
    }
  }
  std::vector<float> x(static_cast<size_t>(k), 1.0f), y(static_cast<size_t>(n));
  EXPECT_FALSE(gemm_w8a8_stored({.n = n, .k = k, .q = q, .scales = nullptr, .comp = comp.data()}, x.data(), 1,
                                y.data(), nullptr)
                   .has_value());
}

}  // namespace
}  // namespace recur::gemm
