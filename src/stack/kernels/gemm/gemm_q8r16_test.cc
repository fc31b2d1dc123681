// Q8_0 in groups of 16 rows (WeightFormat::kQ8_0R16): the regrouping is exactly invertible,
// every ISA path gives the scalar kernel's bits for every M, pool and chunking, each token's
// row is what the one-token call gives, and the values match a float64 reference of the same
// quantized operands within fp32 accumulation error.
#include <gtest/gtest.h>

#include <cstring>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_test_util.h"

namespace recur::gemm {
namespace {

using testing::encode;
using testing::random_values;

using Matrix = testing::RegroupedMatrix;

Matrix q8_matrix(int64_t n, int64_t k, uint64_t seed) { return testing::regrouped_matrix(WeightFormat::kQ8_0, n, k, seed); }

TEST(Q8R16, RegroupingIsExactlyInvertible) {
  const int64_t n = 48, k = 96;
  Matrix m = q8_matrix(n, k, 3);
  EXPECT_EQ(row_bytes(WeightFormat::kQ8_0R16, k), row_bytes(WeightFormat::kQ8_0, k));
  EXPECT_NE(m.rows, m.r16);  // regrouped, not copied
  std::vector<std::byte> row(row_bytes(WeightFormat::kQ8_0, k));
  for (int64_t r = 0; r < n; ++r) {
    q8_0_r16_row(m.r16.data(), k, r, row.data());
    ASSERT_EQ(0, std::memcmp(row.data(), m.rows.data() + size_t(r) * row.size(), row.size())) << "row " << r;
  }
}

TEST(Q8R16, BadShapesAreRejected) {
  std::vector<std::byte> buf(4096);
  EXPECT_FALSE(repack_q8_0_r16(buf.data(), 15, 32, buf.data()).has_value());
  EXPECT_FALSE(repack_q8_0_r16(buf.data(), 16, 40, buf.data()).has_value());
  EXPECT_FALSE(repack_q8_0_r16(nullptr, 16, 32, buf.data()).has_value());
  std::vector<float> x(64), y(64);
  const WeightView odd{.format = WeightFormat::kQ8_0R16, .n = 24, .k = 32, .data = buf.data()};
  auto st = gemm_stored(odd, x.data(), 1, y.data(), nullptr);
  ASSERT_FALSE(st.has_value());
  EXPECT_NE(st.error().to_string().find("n % 16"), std::string::npos) << st.error().to_string();
  const WeightView tail{.format = WeightFormat::kQ8_0R16, .n = 16, .k = 40, .data = buf.data()};
  EXPECT_FALSE(gemm_stored(tail, x.data(), 1, y.data(), nullptr).has_value());
}

// Every runnable ISA, with and without a pool, against the scalar kernel's bits; each token's
// outputs against the one-token call.
TEST(Q8R16, EveryIsaMFormAndPoolGivesTheScalarBits) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  for (int64_t k : {32, 96, 2080}) {
    for (int64_t n : {16, 48, 160}) {
      Matrix w = q8_matrix(n, k, uint64_t(k + n));
      for (int64_t m : {1, 2, 3, 7, 8, 9, 17}) {
        const auto x = random_values(size_t(m * k), uint64_t(k * 7 + m), int(m % 3));
        std::vector<float> want(size_t(m * n));
        {
          ScopedIsaCap cap(Isa::kScalar);
          ASSERT_TRUE(gemm_stored(w.view, x.data(), m, want.data(), nullptr).has_value());
        }
        for (Isa isa : runnable_isas()) {
          for (ThreadPool* p : {static_cast<ThreadPool*>(nullptr), pool->get()}) {
            ScopedIsaCap cap(isa);
            std::vector<float> y(size_t(m * n), -7.0f);
            ASSERT_TRUE(gemm_stored(w.view, x.data(), m, y.data(), p).has_value());
            ASSERT_EQ(0, std::memcmp(y.data(), want.data(), y.size() * sizeof(float)))
                << isa_name(isa) << " M" << m << " N" << n << " K" << k << (p ? " pool" : "");
          }
          ScopedIsaCap cap(isa);
          for (int64_t t = 0; t < m; t += 4) {
            std::vector<float> one(static_cast<size_t>(n));
            ASSERT_TRUE(gemm_stored(w.view, x.data() + t * k, 1, one.data(), pool->get()).has_value());
            ASSERT_EQ(0, std::memcmp(one.data(), want.data() + t * n, one.size() * sizeof(float)))
                << isa_name(isa) << " token " << t << " of M" << m << " K" << k;
          }
        }
      }
    }
  }
}

// The values: sum over blocks of d_w d_x times the exact integer dot, in float64, from the
// row-form weights and the quantized x; fp32 accumulation over B blocks errs by at most
// (B + 2) 2^-24 of the sum of the terms' magnitudes.
TEST(Q8R16, MatchesFloat64OfTheQuantizedOperands) {
  const int64_t n = 32, k = 4128, m = 3, blocks = k / kQ8Block;
  Matrix w = q8_matrix(n, k, 11);
  const auto x = random_values(size_t(m * k), 12, 2);
  std::vector<int8_t> xq(size_t(m * k));
  std::vector<float> dx(size_t(m * blocks));
  quantize_q8_0_rows(x.data(), m, k, xq.data(), dx.data());
  std::vector<float> y(size_t(m * n));
  ASSERT_TRUE(gemm_stored(w.view, x.data(), m, y.data(), nullptr).has_value());
  const size_t rb = row_bytes(WeightFormat::kQ8_0, k);
  for (int64_t t = 0; t < m; ++t) {
    for (int64_t r = 0; r < n; ++r) {
      double ref = 0, mag = 0;
      for (int64_t b = 0; b < blocks; ++b) {
        const std::byte* blk = w.rows.data() + size_t(r) * rb + size_t(b) * kQ8BlockBytes;
        uint16_t h;
        std::memcpy(&h, blk, 2);
        int64_t s = 0;
        for (int i = 0; i < kQ8Block; ++i) s += int64_t(int8_t(blk[2 + i])) * xq[size_t(t * k + b * kQ8Block + i)];
        const double term = double(s) * double(fp16_to_fp32(h)) * double(dx[size_t(t * blocks + b)]);
        ref += term;
        mag += std::fabs(term);
      }
      ASSERT_LE(std::fabs(y[size_t(t * n + r)] - ref), double(blocks + 2) * std::ldexp(1.0, -24) * mag)
          << "token " << t << " row " << r;
    }
  }
}

}  // namespace
}  // namespace recur::gemm
