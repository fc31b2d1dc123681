// gemm_stored() for F32, F16, BF16 and Q8_0 weights on every ISA path against the float64
// reference over the exactly widened weights: |y - ref| <= (K + 8) 2^-24 sum_k |x w|, the worst
// case of fp32 accumulation. Shapes cover M = 1..13 and K tails of every chunk width.
#include <gtest/gtest.h>

#include <array>
#include <cstring>
#include <memory>

#include "core/knobs.h"
#include "core/convert.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_internal.h"
#include "kernels/gemm/gemm_reference.h"
#include "kernels/gemm/gemm_test_util.h"

namespace recur::gemm {
namespace {

using testing::random_values;

using testing::encode;

TEST(GemmStored, EveryFormatAndIsaMatchesReference) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  for (Isa isa : runnable_isas()) {
    for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBf16, WeightFormat::kQ8_0}) {
      const bool q8 = f == WeightFormat::kQ8_0;
      for (int64_t k : q8 ? std::vector<int64_t>{32, 96, 4128} : std::vector<int64_t>{1, 17, 100, 129, 1000, 4100}) {
        for (int64_t m : {1, 2, 3, 5, 8, 13}) {
          for (int64_t n : {1, 7, 130}) {
            const uint64_t seed = uint64_t(k * 131 + m * 7 + n);
            auto x = random_values(size_t(m * k), seed, int(seed % 3));
            auto wf = random_values(size_t(n * k), seed + 1, 0);
            auto bytes = encode(f, wf, n, k);
            const WeightView view{.format = f, .n = n, .k = k, .data = bytes.data()};
            std::vector<float> y(size_t(m * n), -3.0f);
            {
              ScopedIsaCap cap(isa);
              auto st = gemm_stored(view, x.data(), m, y.data(), pool->get());
              ASSERT_TRUE(st.has_value()) << st.error().to_string();
            }
            std::vector<double> ref(y.size()), mag(y.size());
            reference_stored(view, x.data(), m, ref, mag);
            for (size_t i = 0; i < y.size(); ++i)
              ASSERT_LE(std::fabs(y[i] - ref[i]), double(k + 8) * std::ldexp(1.0, -24) * mag[i])
                  << weight_format_name(f) << " " << isa_name(isa) << " M" << m << " N" << n << " K" << k << " at " << i;
          }
        }
      }
    }
  }
}

// The prefill GEMM (M > 8): token panels of 64 with partial last panels of every vector count,
// W row blocks of 6 with tails, K over several K blocks with a tail; every format, both Q8_0
// activation forms (q8_0: against the reference over x's Q8_0 values), every ISA, and the
// same bits on 1 and 2 threads and without a pool.
TEST(GemmStored, PrefillSizedMMatchesReferenceOnEveryIsa) {
  auto pool1 = ThreadPool::create({.threads = 1, .pin = false});
  auto pool2 = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool1.has_value() && pool2.has_value());
  for (Isa isa : runnable_isas()) {
    for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBf16, WeightFormat::kQ8_0}) {
      for (Q8Activations q8 : {Q8Activations::kF32, Q8Activations::kQ8_0}) {
        if (f != WeightFormat::kQ8_0 && q8 == Q8Activations::kQ8_0) continue;
        for (auto [m, n, k] : {std::array<int64_t, 3>{9, 5, 64}, {40, 13, 2112}, {130, 67, 96}, {77, 6, 1056}}) {
          const uint64_t seed = uint64_t(m * 7 + n + k);
          auto x = random_values(size_t(m * k), seed, int(seed % 3));
          const auto bytes = encode(f, random_values(size_t(n * k), seed + 3), n, k);
          const WeightView view{.format = f, .n = n, .k = k, .data = bytes.data()};
          std::vector<float> y(size_t(m * n)), y1(y.size()), y0(y.size());
          {
            ScopedIsaCap cap(isa);
            ASSERT_TRUE(gemm_stored(view, x.data(), m, y.data(), pool2->get(), nullptr, q8).has_value());
            ASSERT_TRUE(gemm_stored(view, x.data(), m, y1.data(), pool1->get(), nullptr, q8).has_value());
            ASSERT_TRUE(gemm_stored(view, x.data(), m, y0.data(), nullptr, nullptr, q8).has_value());
          }
          EXPECT_EQ(y, y1);
          EXPECT_EQ(y, y0);
          if (q8 == Q8Activations::kQ8_0) {
            std::vector<int8_t> q(x.size());
            std::vector<float> d(x.size() / kQ8Block);
            quantize_q8_0_rows(x.data(), m, k, q.data(), d.data());
            for (size_t i = 0; i < x.size(); ++i) x[i] = float(q[i]) * d[i / kQ8Block];
          }
          std::vector<double> ref(y.size()), mag(y.size());
          reference_stored(view, x.data(), m, ref, mag);
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_LE(std::fabs(y[i] - ref[i]), double(k + 8) * std::ldexp(1.0, -24) * mag[i])
                << weight_format_name(f) << " act " << q8_activations_name(q8) << " " << isa_name(isa) << " M" << m
                << " N" << n << " K" << k << " at " << i;
        }
      }
    }
  }
}

// Every ISA path this CPU runs (AVX-512 one-row GEMV / prefill GEMM, their AVX2 versions, the
// dot tiles) against the scalar path on odd shapes: M = 1 (GEMV), 3 (dot tiles), 17 (prefill
// GEMM: a partial 16- and 64-token panel), N with row-block tails, K with tails of every vector
// width (Q8_0: odd block counts). Tolerance: each path is within (K + 8) 2^-24 sum|x w| of the
// exact sum over the operands it sees (fp32 accumulation, any order; Q8_0 activations: both
// paths see quantize_q8_0_rows' bits), so two paths differ by at most twice that.
TEST(GemmStored, EveryPathMatchesTheScalarPathOnOddShapes) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBf16, WeightFormat::kQ8_0}) {
    for (Q8Activations q8 : {Q8Activations::kF32, Q8Activations::kQ8_0}) {
      if (f != WeightFormat::kQ8_0 && q8 == Q8Activations::kQ8_0) continue;
      const bool blocks = f == WeightFormat::kQ8_0;
      for (int64_t k : blocks ? std::vector<int64_t>{32, 96, 1056} : std::vector<int64_t>{7, 37, 1037}) {
        for (int64_t m : {1, 3, 17}) {
          for (int64_t n : {1, 13}) {
            const uint64_t seed = uint64_t(k * 31 + m * 5 + n);
            auto x = random_values(size_t(m * k), seed, int(seed % 3));
            const auto bytes = encode(f, random_values(size_t(n * k), seed + 7), n, k);
            const WeightView view{.format = f, .n = n, .k = k, .data = bytes.data()};
            std::vector<float> scalar(size_t(m * n)), y(scalar.size());
            {
              ScopedIsaCap cap(Isa::kScalar);
              ASSERT_TRUE(gemm_stored(view, x.data(), m, scalar.data(), pool->get(), nullptr, q8).has_value());
            }
            std::vector<float> seen = x;  // the activations the kernels multiply
            if (q8 == Q8Activations::kQ8_0) {
              std::vector<int8_t> q(x.size());
              std::vector<float> d(x.size() / kQ8Block);
              quantize_q8_0_rows(x.data(), m, k, q.data(), d.data());
              for (size_t i = 0; i < x.size(); ++i) seen[i] = float(q[i]) * d[i / kQ8Block];
            }
            std::vector<double> ref(y.size()), mag(y.size());
            reference_stored(view, seen.data(), m, ref, mag);
            for (Isa isa : runnable_isas()) {
              {
                ScopedIsaCap cap(isa);
                ASSERT_TRUE(gemm_stored(view, x.data(), m, y.data(), pool->get(), nullptr, q8).has_value());
              }
              for (size_t i = 0; i < y.size(); ++i)
                ASSERT_LE(std::fabs(y[i] - scalar[i]), 2 * double(k + 8) * std::ldexp(1.0, -24) * mag[i])
                    << weight_format_name(f) << " act " << q8_activations_name(q8) << " " << isa_name(isa) << " M"
                    << m << " N" << n << " K" << k << " at " << i;
            }
          }
        }
      }
    }
  }
}

// GEMV over stored weights beyond the caches (> 4 MiB, rows < 16 KiB: one W row per tile) gives
// the bits of a view of its first 200 rows (under 4 MiB: 4-row tiles), in every format, both
// Q8_0 activation forms, and the bf16 precisions over BF16 weights.
TEST(GemmStored, GemvOverLargeWeightsGivesTheBitsOfSmallWeights) {
  const int64_t n = 2053, k = 2112, head = 200;
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  auto wf = random_values(size_t(n * k), 5, 0);
  auto same_bits = [&](auto run, const std::string& what) {
    for (int64_t m : {1, 5}) {
      auto x = random_values(size_t(m * k), uint64_t(m), 1);
      std::vector<float> yb(size_t(m * n)), ys(size_t(m * head));
      ASSERT_TRUE(run(n, x.data(), m, yb.data()).has_value()) << what;
      ASSERT_TRUE(run(head, x.data(), m, ys.data()).has_value()) << what;
      for (int64_t i = 0; i < m; ++i)
        for (int64_t c = 0; c < head; ++c)
          ASSERT_EQ(yb[size_t(i * n + c)], ys[size_t(i * head + c)]) << what << " " << isa_name(active_isa()) << " M"
                                                                      << m << " at m=" << i << " n=" << c;
    }
  };
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBf16, WeightFormat::kQ8_0}) {
    auto bytes = encode(f, wf, n, k);
    for (Isa isa : runnable_isas()) {
      ScopedIsaCap cap(isa);
      for (Q8Activations q8 : {Q8Activations::kF32, Q8Activations::kQ8_0}) {
        same_bits([&](int64_t rows, const float* x, int64_t m, float* y) {
          return gemm_stored({.format = f, .n = rows, .k = k, .data = bytes.data()}, x, m, y, pool->get(), nullptr, q8);
        }, std::string(weight_format_name(f)));
      }
      if (f != WeightFormat::kBf16) continue;
      for (Precision p : {Precision::kBf16, Precision::kBf16x3, Precision::kBf16x6}) {
        same_bits([&](int64_t rows, const float* x, int64_t m, float* y) {
          return gemm_stored_bf16({.format = f, .n = rows, .k = k, .data = bytes.data()}, p, x, m, y, pool->get(),
                                  nullptr);
        }, std::string(precision_name(p)));
      }
    }
  }
}

// The GEMV and the prefill GEMM hand out row chunks from a counter (whichever thread is free
// takes the next), and GEMV rows longer than 4096 take the prefetching kernel: the bits must not
// depend on the pool's size or on which thread ran a row, in every format and on every ISA.
TEST(GemmStored, BitsDoNotDependOnThePool) {
  auto pool2 = ThreadPool::create({.threads = 2, .pin = false});
  auto pool3 = ThreadPool::create({.threads = 3, .pin = false});
  ASSERT_TRUE(pool2.has_value() && pool3.has_value());
  for (auto [m, n, k] : {std::array<int64_t, 3>{1, 1001, 1056}, {1, 1001, 4160}, {37, 67, 1056}, {37, 67, 2112}}) {
    const auto x = random_values(size_t(m * k), uint64_t(k + m), 1);
    const auto wf = random_values(size_t(n * k), uint64_t(k) + 3, 0);
    for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBf16, WeightFormat::kQ8_0}) {
      const auto bytes = encode(f, wf, n, k);
      const WeightView view{.format = f, .n = n, .k = k, .data = bytes.data()};
      for (Isa isa : runnable_isas()) {
        ScopedIsaCap cap(isa);
        const Q8Activations q8 = f == WeightFormat::kQ8_0 ? Q8Activations::kQ8_0 : Q8Activations::kF32;
        std::vector<float> alone(static_cast<size_t>(m * n)), two(alone.size()), three(alone.size());
        ASSERT_TRUE(gemm_stored(view, x.data(), m, alone.data(), nullptr, nullptr, q8).has_value());
        ASSERT_TRUE(gemm_stored(view, x.data(), m, two.data(), pool2->get(), nullptr, q8).has_value());
        ASSERT_TRUE(gemm_stored(view, x.data(), m, three.data(), pool3->get(), nullptr, q8).has_value());
        for (size_t i = 0; i < alone.size(); ++i) {
          ASSERT_EQ(alone[i], two[i]) << weight_format_name(f) << " " << isa_name(isa) << " M" << m << " K" << k
                                      << " at " << i;
          ASSERT_EQ(alone[i], three[i]) << weight_format_name(f) << " " << isa_name(isa) << " M" << m << " K" << k
                                        << " at " << i;
        }
      }
    }
  }
}

// Q8_0 activations: the reference is the float64 sum over the dequantized activations
// (q_x d_x) and weights (q_w d_w); the kernel's block dots are exact integers, so the bound is
// the fp32 accumulation one again. The Q8_0 quantizer is checked on the way (|x - q d| <=
// amax / 254 + 127 |d - amax / 127|: rounding at the exact scale, then d's fp16 rounding).
TEST(GemmStored, Q8ActivationsMatchReferenceOnEveryIsa) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  for (Isa isa : runnable_isas()) {
    for (int64_t k : {32, 96, 4128}) {
      for (int64_t m : {1, 3, 8, 9}) {
        const int64_t n = 37;
        const uint64_t seed = uint64_t(k + m);
        auto x = random_values(size_t(m * k), seed, int(seed % 3));
        auto bytes = encode(WeightFormat::kQ8_0, random_values(size_t(n * k), seed + 5), n, k);
        const WeightView view{.format = WeightFormat::kQ8_0, .n = n, .k = k, .data = bytes.data()};
        std::vector<int8_t> q(x.size());
        std::vector<float> d(x.size() / kQ8Block), xdq(x.size());
        quantize_q8_0_rows(x.data(), m, k, q.data(), d.data());
        for (size_t i = 0; i < x.size(); ++i) {
          xdq[i] = float(q[i]) * d[i / kQ8Block];
          // q rounds x to the exact scale amax / 127; d is that scale in fp16 (ggml's).
          double amax = 0;
          for (size_t j = i / kQ8Block * kQ8Block; j < (i / kQ8Block + 1) * kQ8Block; ++j)
            amax = std::max(amax, std::fabs(double(x[j])));
          const double bound = 0.5001 * amax / 127 + 127 * std::fabs(d[i / kQ8Block] - amax / 127);
          ASSERT_LE(std::fabs(double(x[i]) - double(q[i]) * d[i / kQ8Block]), bound) << i;
        }
        std::vector<float> y(size_t(m * n));
        Workspace ws;
        {
          ScopedIsaCap cap(isa);
          ASSERT_TRUE(gemm_stored(view, x.data(), m, y.data(), pool->get(), &ws, Q8Activations::kQ8_0).has_value());
        }
        std::vector<double> ref(y.size()), mag(y.size());
        reference_stored(view, xdq.data(), m, ref, mag);
        for (size_t i = 0; i < y.size(); ++i)
          ASSERT_LE(std::fabs(y[i] - ref[i]), double(k + 8) * std::ldexp(1.0, -24) * mag[i])
              << isa_name(isa) << " M" << m << " K" << k << " at " << i;
      }
    }
  }
}

// The AVX-512 GEMV's activation quantizer gives quantize_q8_0_rows' bits (|q|, signs, scales),
// zero blocks and an odd block count included.
TEST(GemmStored, GemvQ8QuantizerMatchesTheScalarOne) {
  if (active_isa() < Isa::kAvx512) GTEST_SKIP() << "no AVX-512";
  for (int64_t k : {32, 96, 4128}) {
    for (int dist = 0; dist < 3; ++dist) {
      auto x = random_values(size_t(k), uint64_t(k + dist), dist);
      for (int i = 0; i < kQ8Block; ++i) x[size_t(k - kQ8Block + i)] = 0.0f;  // a zero block
      const int64_t blocks = k / kQ8Block, pairs = (blocks + 1) / 2;
      std::vector<int8_t> q(static_cast<size_t>(k)), abs(static_cast<size_t>(pairs * 64));
      std::vector<float> d(static_cast<size_t>(blocks)), dv(d.size()), scale16(static_cast<size_t>(pairs * 16));
      std::vector<uint64_t> neg(static_cast<size_t>(pairs));
      quantize_q8_0_rows(x.data(), 1, k, q.data(), d.data());
      GemvQ8X out{.abs = abs.data(), .neg = neg.data(), .scale16 = scale16.data(), .d = dv.data()};
      kAvx512Gemv.q8_prepare(x.data(), k, out);
      EXPECT_EQ(d, dv) << "K" << k;
      for (int64_t i = 0; i < pairs * 64; ++i) {
        const int v = i < k ? q[size_t(i)] : 0;
        ASSERT_EQ(abs[size_t(i)], std::abs(v)) << "K" << k << " at " << i;
        ASSERT_EQ((neg[size_t(i / 64)] >> (i % 64)) & 1, uint64_t(v < 0)) << "K" << k << " at " << i;
        ASSERT_EQ(scale16[size_t(i / 64 * 16 + (i % 64) / 32 * 8)], i < k ? d[size_t(i / kQ8Block)] : 0.0f);
      }
    }
  }
}

// The AVX2 GEMV's quantizer (also the AVX2 prefill GEMM's) gives quantize_q8_0_rows' bits,
// zero blocks and exact halves (x / d = n + 0.5: round half to even) included.
TEST(GemmStored, Avx2Q8QuantizerMatchesTheScalarOne) {
  if (detected_isa() < Isa::kAvx2) GTEST_SKIP() << "no AVX2";
  for (int64_t k : {32, 96, 4128}) {
    for (int dist = 0; dist < 3; ++dist) {
      auto x = random_values(size_t(k), uint64_t(k + dist), dist);
      for (int i = 0; i < kQ8Block; ++i) x[size_t(k - kQ8Block + i)] = 0.0f;  // a zero block
      for (int i = 0; i < kQ8Block; ++i) x[size_t(i)] = i == 0 ? 127.0f : float(i) - 15.5f;  // halves
      std::vector<int8_t> q(static_cast<size_t>(k)), qv(q.size());
      std::vector<float> d(static_cast<size_t>(k / kQ8Block)), dv(d.size());
      quantize_q8_0_rows(x.data(), 1, k, q.data(), d.data());
      kAvx2Gemv.q8_quantize(x.data(), k, qv.data(), dv.data());
      EXPECT_EQ(d, dv) << "K" << k;
      EXPECT_EQ(q, qv) << "K" << k;
    }
  }
}

// BF16 weights against x rounded or split into bf16 parts (the engine's projections at
// kernel.gemm.precision): W is exactly bf16, so reference_precision over the widened weights is
// the exact value of what the kernel computes, up to fp32 accumulation.
TEST(GemmStored, Bf16WeightsAtBf16PrecisionsMatchReferenceOnEveryIsa) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  for (Isa isa : runnable_isas()) {
    for (Precision p : {Precision::kF32, Precision::kBf16, Precision::kBf16x3, Precision::kBf16x6}) {
      for (int64_t k : {17, 100, 1000}) {
        for (int64_t m : {1, 3, 5}) {
          const int64_t n = 37;
          const uint64_t seed = uint64_t(k * 3 + m);
          auto x = random_values(size_t(m * k), seed, int(seed % 3));
          auto bytes = encode(WeightFormat::kBf16, random_values(size_t(n * k), seed + 9), n, k);
          const WeightView view{.format = WeightFormat::kBf16, .n = n, .k = k, .data = bytes.data()};
          std::vector<float> wide(size_t(n * k)), y(size_t(m * n));
          for (size_t i = 0; i < wide.size(); ++i) {
            uint16_t h;
            std::memcpy(&h, bytes.data() + 2 * i, 2);
            wide[i] = bf16_to_fp32(h);
          }
          {
            ScopedIsaCap cap(isa);
            auto st = gemm_stored_bf16(view, p, x.data(), m, y.data(), pool->get());
            ASSERT_TRUE(st.has_value()) << st.error().to_string();
          }
          std::vector<double> ref(y.size()), mag(y.size());
          ASSERT_TRUE(reference_precision(p, x, wide, m, n, k, ref, mag).has_value());
          for (size_t i = 0; i < y.size(); ++i)
            ASSERT_LE(std::fabs(y[i] - ref[i]), double(k + 8) * std::ldexp(1.0, -24) * mag[i])
                << precision_name(p) << " " << isa_name(isa) << " M" << m << " K" << k << " at " << i;
        }
      }
    }
  }
  std::vector<std::byte> f32(4 * 8);
  std::vector<float> x(8), y(1);
  EXPECT_FALSE(gemm_stored_bf16({.format = WeightFormat::kF32, .n = 1, .k = 8, .data = f32.data()},
                                Precision::kBf16x3, x.data(), 1, y.data(), nullptr)
                   .has_value())
      << "only bf16 weights";
}

// Batched decode (2 <= M <= 8, gemm_small_m.h): every row of y has the bits the one-row GEMV
// gives for that x row, on every ISA path (the scalar path runs the dot tiles, whose per-output
// sums do not depend on M either), every format, every M, N not a multiple of the 16-row chunk,
// K with tails of every vector width and long rows (the prefetching F16 GEMV past K = 4096); and
// it stays within the fp32 bound of the scalar path.
TEST(GemmStored, SmallMRowsHaveTheBitsOfOneRowGemv) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  ASSERT_TRUE(pool.has_value());
  const int64_t n = 37;
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBf16, WeightFormat::kQ8_0}) {
    const bool blocks = f == WeightFormat::kQ8_0;
    const Q8Activations q8 = blocks ? Q8Activations::kQ8_0 : Q8Activations::kF32;
    for (int64_t k : blocks ? std::vector<int64_t>{32, 96, 1056, 5632} : std::vector<int64_t>{7, 37, 1037, 5632}) {
      const auto bytes = encode(f, random_values(size_t(n * k), uint64_t(k) + 11), n, k);
      const WeightView view{.format = f, .n = n, .k = k, .data = bytes.data()};
      const auto x = random_values(size_t(8 * k), uint64_t(k) * 7, int(k % 3));
      std::vector<float> scalar(size_t(8 * n));
      {
        ScopedIsaCap cap(Isa::kScalar);
        ASSERT_TRUE(gemm_stored(view, x.data(), 8, scalar.data(), pool->get(), nullptr, q8).has_value());
      }
      std::vector<float> seen = x;  // the activations the kernels multiply
      if (blocks) {
        std::vector<int8_t> q(x.size());
        std::vector<float> d(x.size() / kQ8Block);
        quantize_q8_0_rows(x.data(), 8, k, q.data(), d.data());
        for (size_t i = 0; i < x.size(); ++i) seen[i] = float(q[i]) * d[i / kQ8Block];
      }
      std::vector<double> ref(scalar.size()), mag(scalar.size());
      reference_stored(view, seen.data(), 8, ref, mag);
      for (Isa isa : runnable_isas()) {
        ScopedIsaCap cap(isa);
        std::vector<float> one(size_t(8 * n));
        for (int64_t i = 0; i < 8; ++i)
          ASSERT_TRUE(gemm_stored(view, x.data() + i * k, 1, one.data() + i * n, pool->get(), nullptr, q8).has_value());
        for (int64_t m = 2; m <= 8; ++m) {
          std::vector<float> y(size_t(m * n));
          ASSERT_TRUE(gemm_stored(view, x.data(), m, y.data(), pool->get(), nullptr, q8).has_value());
          for (size_t i = 0; i < y.size(); ++i) {
            ASSERT_EQ(y[i], one[i]) << weight_format_name(f) << " " << isa_name(isa) << " M" << m << " K" << k
                                    << " row " << i / size_t(n) << " col " << i % size_t(n);
            ASSERT_LE(std::fabs(y[i] - scalar[i]), 2 * double(k + 8) * std::ldexp(1.0, -24) * mag[i])
                << weight_format_name(f) << " " << isa_name(isa) << " M" << m << " K" << k << " at " << i;
          }
        }
      }
    }
  }
}

// F16Activations::kF16 multiplies x rounded to fp16: on every path and M (the one-row AVX-512
// GEMV reads x as fp16, the others an fp32 copy of the rounded values) the bits of fp32
// activations that hold the rounded values, independent of the pool; and not the bits of x
// unrounded.
TEST(GemmStored, F16ActivationsGiveTheBitsOfTheRoundedX) {
  auto pool2 = ThreadPool::create({.threads = 2, .pin = false});
  auto pool3 = ThreadPool::create({.threads = 3, .pin = false});
  ASSERT_TRUE(pool2.has_value() && pool3.has_value());
  const Activations f16x(Q8Activations::kF32, F16Activations::kF16);
  const int64_t n = 37;
  for (int64_t k : {7, 37, 1037, 4100, 5632, 5633}) {
    const auto bytes = encode(WeightFormat::kF16, random_values(size_t(n * k), uint64_t(k) + 5), n, k);
    const WeightView view{.format = WeightFormat::kF16, .n = n, .k = k, .data = bytes.data()};
    for (int64_t m : {1, 2, 5, 8, 13}) {
      const auto x = random_values(size_t(m * k), uint64_t(k * 3 + m), int(k % 3));
      std::vector<float> rounded(x.size());
      for (size_t i = 0; i < x.size(); ++i) rounded[i] = fp16_to_fp32(fp32_to_fp16(x[i]));
      for (Isa isa : runnable_isas()) {
        ScopedIsaCap cap(isa);
        std::vector<float> want(size_t(m * n)), got(want.size()), got3(want.size()), plain(want.size());
        ASSERT_TRUE(gemm_stored(view, rounded.data(), m, want.data(), pool2->get()).has_value());
        ASSERT_TRUE(gemm_stored(view, x.data(), m, got.data(), pool2->get(), nullptr, f16x).has_value());
        ASSERT_TRUE(gemm_stored(view, x.data(), m, got3.data(), pool3->get(), nullptr, f16x).has_value());
        ASSERT_TRUE(gemm_stored(view, x.data(), m, plain.data(), pool2->get()).has_value());
        size_t differs = 0;
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_EQ(got[i], want[i]) << isa_name(isa) << " M" << m << " K" << k << " at " << i;
          ASSERT_EQ(got3[i], want[i]) << isa_name(isa) << " M" << m << " K" << k << " at " << i;
          differs += plain[i] != want[i];
        }
        if (k >= 37) {
          EXPECT_GT(differs, 0u) << isa_name(isa) << " M" << m << " K" << k;
        }
      }
    }
  }
}

TEST(GemmStored, ActivationKnobsReadTheirDefaultsAndChoices) {
  Config config;
  auto a = activations_from_config(config);
  ASSERT_TRUE(a.has_value()) << a.error().to_string();
  EXPECT_EQ(*a, Activations(Q8Activations::kQ8_0, F16Activations::kF16));
  ASSERT_TRUE(config.set("kernel.gemm.f16_activations", "f32").has_value());
  EXPECT_EQ(activations_from_config(config)->f16, F16Activations::kF32);
  EXPECT_FALSE(config.set("kernel.gemm.f16_activations", "bf16").has_value());
  EXPECT_EQ(f16_activations_name(F16Activations::kF16), "f16");
}

TEST(GemmStored, RejectsQ8WithPartialBlocksAndEmptyWeights) {
  std::vector<std::byte> data(340);
  std::vector<float> x(40), y(1);
  EXPECT_FALSE(gemm_stored({.format = WeightFormat::kQ8_0, .n = 1, .k = 40, .data = data.data()}, x.data(), 1,
                           y.data(), nullptr)
                   .has_value());
  EXPECT_FALSE(gemm_stored({.format = WeightFormat::kF32, .n = 1, .k = 4, .data = nullptr}, x.data(), 1, y.data(),
                           nullptr)
                   .has_value());
  EXPECT_EQ(row_bytes(WeightFormat::kQ8_0, 64), 68u);
  EXPECT_EQ(parse_weight_format("q8_0"), WeightFormat::kQ8_0);
}

}  // namespace
}  // namespace recur::gemm
