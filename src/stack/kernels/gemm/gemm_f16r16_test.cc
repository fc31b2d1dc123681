// F16 in groups of 16 rows (WeightFormat::kF16R16): the regrouping is exactly invertible,
// every ISA path gives the scalar kernel's bits for every M, pool and activation form, each
// token's row is the one-token call's, and the values match float64 within fp32 accumulation.
#include <gtest/gtest.h>

#include <cstring>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_reference.h"
#include "kernels/gemm/gemm_test_util.h"

namespace recur::gemm {
namespace {

using testing::encode;
using testing::random_values;

using Matrix = testing::RegroupedMatrix;

Matrix f16_matrix(int64_t n, int64_t k, uint64_t seed) { return testing::regrouped_matrix(WeightFormat::kF16, n, k, seed); }

TEST(F16R16, RegroupingIsExactlyInvertible) {
  const int64_t n = 32, k = 37;
  Matrix m = f16_matrix(n, k, 3);
  EXPECT_EQ(row_bytes(WeightFormat::kF16R16, k), row_bytes(WeightFormat::kF16, k));
  EXPECT_NE(m.rows, m.r16);
  std::vector<std::byte> row(row_bytes(WeightFormat::kF16, k));
  for (int64_t r = 0; r < n; ++r) {
    f16_r16_row(m.r16.data(), k, r, row.data());
    ASSERT_EQ(0, std::memcmp(row.data(), m.rows.data() + size_t(r) * row.size(), row.size())) << "row " << r;
  }
}

TEST(F16R16, BadShapesAreRejected) {
  std::vector<std::byte> buf(4096);
  EXPECT_FALSE(repack_f16_r16(buf.data(), 8, 32, buf.data()).has_value());
  EXPECT_FALSE(repack_f16_r16(buf.data(), 16, 0, buf.data()).has_value());
  EXPECT_FALSE(repack_f16_r16(nullptr, 16, 32, buf.data()).has_value());
  std::vector<float> x(64), y(64);
  const WeightView odd{.format = WeightFormat::kF16R16, .n = 20, .k = 32, .data = buf.data()};
  auto st = gemm_stored(odd, x.data(), 1, y.data(), nullptr);
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.error().to_string().find("n % 16"), std::string::npos) << st.error().to_string();
}

TEST(F16R16, EveryIsaMFormAndPoolGivesTheScalarBits) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  for (F16Activations act : {F16Activations::kF16, F16Activations::kF32}) {
    for (int64_t k : {1, 7, 64, 2051}) {
      for (int64_t n : {16, 48}) {
        Matrix w = f16_matrix(n, k, uint64_t(k + n));
        for (int64_t m : {1, 2, 3, 4, 5, 9, 37}) {
          const auto x = random_values(size_t(m * k), uint64_t(k * 7 + m), int(m % 3));
          const Activations forms(Q8Activations::kQ8_0, act);
          std::vector<float> want(size_t(m * n));
          {
            ScopedIsaCap cap(Isa::kScalar);
            ASSERT_TRUE(gemm_stored(w.view, x.data(), m, want.data(), nullptr, nullptr, forms).has_value());
          }
          for (Isa isa : runnable_isas()) {
            ScopedIsaCap cap(isa);
            for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool->get()}) {
              std::vector<float> y(size_t(m * n), -7.0f);
              ASSERT_TRUE(gemm_stored(w.view, x.data(), m, y.data(), p, nullptr, forms).has_value());
              ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)))
                  << isa_name(isa) << " M" << m << " N" << n << " K" << k << (p ? " pool" : "");
            }
            std::vector<float> one(static_cast<size_t>(n));
            const int64_t t = m - 1;
            ASSERT_TRUE(gemm_stored(w.view, x.data() + t * k, 1, one.data(), pool->get(), nullptr, forms).has_value());
            ASSERT_EQ(0, std::memcmp(one.data(), want.data() + t * n, one.size() * sizeof(float)))
                << isa_name(isa) << " last token of M" << m << " K" << k;
          }
        }
      }
    }
  }
}

// fp32 activations: the float64 reference over the exactly widened weights within the fp32
// accumulation bound (K + 8) 2^-24 sum |x w|; with F16 activations the result equals the
// fp32-activation result for x rounded to fp16 beforehand.
TEST(F16R16, MatchesFloat64AndRoundsXUnderF16Activations) {
  const int64_t n = 32, k = 4100, m = 3;
  Matrix w = f16_matrix(n, k, 21);
  const auto x = random_values(size_t(m * k), 22, 2);
  std::vector<float> y(size_t(m * n));
  ASSERT_TRUE(gemm_stored(w.view, x.data(), m, y.data(), nullptr, nullptr,
                          Activations(Q8Activations::kQ8_0, F16Activations::kF32))
                  .has_value());
  std::vector<double> ref(y.size()), mag(y.size());
  reference_stored(w.view, x.data(), m, ref, mag);
  for (size_t i = 0; i < y.size(); ++i)
    ASSERT_LE(std::fabs(y[i] - ref[i]), double(k + 8) * std::ldexp(1.0, -24) * mag[i]) << i;
  std::vector<float> xr(x.size());
  for (size_t i = 0; i < x.size(); ++i) xr[i] = fp16_to_fp32(fp32_to_fp16(x[i]));
  std::vector<float> via_f16(y.size()), via_rounded(y.size());
  ASSERT_TRUE(gemm_stored(w.view, x.data(), m, via_f16.data(), nullptr, nullptr,
                          Activations(Q8Activations::kQ8_0, F16Activations::kF16))
                  .has_value());
  ASSERT_TRUE(gemm_stored(w.view, xr.data(), m, via_rounded.data(), nullptr, nullptr,
                          Activations(Q8Activations::kQ8_0, F16Activations::kF32))
                  .has_value());
  EXPECT_EQ(0, std::memcmp(via_f16.data(), via_rounded.data(), via_f16.size() * sizeof(float)));
}

}  // namespace
}  // namespace recur::gemm
