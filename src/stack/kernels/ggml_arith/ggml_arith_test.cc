// ggml_arith's functions against their definitions: values within the documented error of exact
// math, and each summation order shown on inputs whose result only that order gives. The bits
// against libggml-cpu.so itself: benchmarks/ggml_bits_check.sh (needs a llama.cpp build).
#include "kernels/ggml_arith/ggml_arith.h"

#include <cmath>
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "kernels/ggml_arith/ggml_dot_loops.h"

namespace recur::ggml_arith {
namespace {

constexpr GgmlIsa kBoth[] = {GgmlIsa::kAvx512, GgmlIsa::kAvx2};

double ulps(float got, double want) {
  const double ulp = std::ldexp(1.0, std::ilogb(float(want)) - 23);
  return std::fabs(double(got) - want) / ulp;
}

TEST(GgmlExp, EachFormIsWithinTwoAndAHalfUlpOfExpAndSaturatesLikeGgml) {
  for (GgmlIsa isa : kBoth) {
    double worst = 0;
    for (float x = -87.0f; x < 88.0f; x += 0.0137f) worst = std::max(worst, ulps(v_expf(isa, x), std::exp(double(x))));
    EXPECT_LT(worst, 2.5) << lanes(isa);  // AVX-512 rounds 1 + p(b) before scaling: 2.14 ulp at -47.5
    EXPECT_EQ(v_expf(isa, 0.0f), 1.0f);
    EXPECT_EQ(v_expf(isa, -INFINITY), 0.0f);  // masked attention scores give exact zeros
    EXPECT_EQ(v_expf(isa, -200.0f), 0.0f);
    EXPECT_EQ(v_expf(isa, 200.0f), INFINITY);
    EXPECT_GT(v_expf(isa, -100.0f), 0.0f);  // a subnormal result, not flushed
  }
}

TEST(GgmlExp, TheTwoFormsDifferInTheirLastBitsSomewhere) {
  int differ = 0;
  for (float x = -20.0f; x < 20.0f; x += 0.001f) differ += v_expf(GgmlIsa::kAvx512, x) != v_expf(GgmlIsa::kAvx2, x);
  EXPECT_GT(differ, 0);
}

TEST(GgmlSilu, WholeVectorsTakeTheVectorExpAndTheTailTakesExpf) {
  std::vector<float> x(19), y(19);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -3.0f + 0.37f * float(i);
  for (GgmlIsa isa : kBoth) {
    silu_row(isa, int64_t(x.size()), y.data(), x.data());
    const size_t whole = x.size() - x.size() % size_t(lanes(isa));
    for (size_t i = 0; i < x.size(); ++i) {
      const float e = i < whole ? v_expf(isa, 0.0f - x[i]) : std::exp(-x[i]);
      EXPECT_EQ(y[i], x[i] / (1.0f + e)) << i;
    }
  }
}

TEST(GgmlSilu, AShardTakesTheFormsOfItsPlaceInTheWholeRow) {
  std::vector<float> x(40), whole(40), part(40);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::cos(float(i)) * 5.0f;
  for (GgmlIsa isa : kBoth) {
    silu_row(isa, 40, whole.data(), x.data());
    silu_span(isa, 40, 0, 20, part.data(), x.data());
    silu_span(isa, 40, 20, 20, part.data() + 20, x.data() + 20);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(part[i], whole[i]) << i;
  }
}

TEST(GgmlSoftMax, RowsSumToOneMaskedEntriesAreZeroAndTheSumIsPerVector) {
  std::vector<float> x(37), mask(37, 0.0f), y(37);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i)) * 4.0f;
  mask[3] = mask[30] = -INFINITY;
  for (GgmlIsa isa : kBoth) {
    soft_max_row(isa, 37, y.data(), x.data(), 0.5f, mask.data());
    double total = 0;
    for (float v : y) total += v;
    EXPECT_NEAR(total, 1.0, 1e-6);
    EXPECT_EQ(y[3], 0.0f);
    EXPECT_EQ(y[30], 0.0f);
    // The sum: each whole vector reduced in fp32 first. Values 2^24 and 1 in one vector lose the 1.
    std::vector<float> big(size_t(lanes(isa)) + 1, -INFINITY), e(big.size());
    big[0] = std::log(16777216.0f);
    big[1] = 0.0f;
    big.back() = 0.0f;  // the tail, added in double
    const double sum = softmax_exp_row(isa, int64_t(big.size()), e.data(), big.data(), 0.0f);
    EXPECT_EQ(sum, double(e[0] + e[1]) + double(e.back()));
  }
}

TEST(GgmlReduce, TheOrdersAreGccsAndLlamafiles) {
  // 2^24 + 1 loses the 1 unless the 1 meets another 1 first.
  float v[16] = {};
  v[0] = 16777216.0f;
  v[8] = -16777216.0f;  // paired with v[0] in the first halving: the ones survive
  v[1] = 1.0f;
  v[3] = 1.0f;
  EXPECT_EQ(reduce_add_16(v), 2.0f);
  float w[8] = {16777216.0f, 1.0f, 1.0f, 0, -16777216.0f, 0, 0, 0};
  // hsum_8: (w0 + w4) + (w2 + w6) = 1, (w1 + w5) + (w3 + w7) = 1.
  EXPECT_EQ(hsum_8(w), 2.0f);
}

TEST(GgmlDot, VecDotFoldsFourAccumulatorsPairwiseThenTheTail) {
  for (GgmlIsa isa : kBoth) {
    const int l = lanes(isa);
    std::vector<float> x(size_t(4 * l + 3), 0.0f), y(x.size(), 1.0f);
    x[0] = 16777216.0f;          // accumulator 0
    x[size_t(l)] = 1.0f;         // accumulator 1
    x[size_t(2 * l)] = -16777216.0f;  // accumulator 2: cancels 0 before 1 is added
    x[size_t(4 * l)] = 0.5f;     // the tail
    EXPECT_EQ(vec_dot_f32(isa, int64_t(x.size()), x.data(), y.data()), 1.5f);
    std::vector<uint16_t> xh(x.size()), yh(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
      xh[i] = fp32_to_fp16(i == 0 || i == size_t(2 * l) ? 0.0f : x[i]);
      yh[i] = fp32_to_fp16(y[i]);
    }
    EXPECT_EQ(vec_dot_f16(isa, int64_t(x.size()), xh.data(), yh.data()), 1.5f);
  }
}

TEST(GgmlDot, VecDotF32TailRoundsItsVectorPartAndFusesOnlyTheLastFew) {
  // gcc's vectorized tail: products rounded for all but the last n % (lanes / 2), which are fused.
  // a * a = 1 + 2^-11 + 2^-24 exactly; rounded, the 2^-24 is lost.
  const float a = 1.0f + 0x1p-12f;
  for (GgmlIsa isa : kBoth) {
    const int half = lanes(isa) / 2;
    std::vector<float> x(size_t(half + 2), 0.0f), y(x.size(), 0.0f);
    x[0] = -1.0f, y[0] = 1.0f;  // rounded part: -1 + round(a * a) = 2^-11
    x[1] = y[1] = a;
    x[size_t(half)] = -1.0f, y[size_t(half)] = 1.0f + 0x1p-11f;  // back to -1 exactly
    x[size_t(half) + 1] = y[size_t(half) + 1] = a;              // fused: -1 + a * a, kept whole
    // All fused (the form before the check against libggml-cpu.so) gives 2^-11 + 2^-23; all
    // rounded 2^-11.
    EXPECT_EQ(vec_dot_f32(isa, int64_t(x.size()), x.data(), y.data()), 0x1p-11f + 0x1p-24f) << half;
  }
}

// The loops compiled for any x86-64 and with AVX2/FMA/F16C give the same accumulators bit for bit
// (fmas and fp16 widenings are exact operations), on values with every exponent and subnormals.
TEST(GgmlDot, BothLoopBuildsGiveTheSameBits) {
  if (detected_isa() < Isa::kAvx2) GTEST_SKIP() << "this CPU has no AVX2: only the portable loops run";
  std::vector<float> x(4 * 64 * 3), y(x.size());
  std::vector<uint16_t> xh(x.size()), yh(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::ldexp(std::sin(float(i) * 1.7f), int(i % 41) - 30);
    y[i] = std::ldexp(std::cos(float(i) * 0.3f), int(i % 23) - 12);
    xh[i] = fp32_to_fp16(x[i]);
    yh[i] = uint16_t(i * 2654435761u >> 16);  // every fp16 pattern class, subnormals and NaNs too
    if ((yh[i] & 0x7c00) == 0x7c00) yh[i] &= 0x3fff;  // but finite
  }
  const int64_t n = int64_t(x.size());
  // One loop of both builds on the same inputs: the accumulators' bytes.
  auto same = [&](auto loop, int l, const auto* xs, const auto* ys, auto& acc_scalar, auto& acc_avx2) {
    std::memset(&acc_scalar, 0, sizeof acc_scalar);
    std::memset(&acc_avx2, 0, sizeof acc_avx2);
    (kDotLoopsScalar.*loop)(l, n, xs, ys, acc_scalar);
    (kDotLoopsAvx2.*loop)(l, n, xs, ys, acc_avx2);
    return std::memcmp(&acc_scalar, &acc_avx2, sizeof acc_scalar) == 0;
  };
  for (int l : {16, 8}) {
    float a[4][16], b[4][16], ta[16], tb[16];
    EXPECT_TRUE(same(&DotLoops::vec_f32, l, x.data(), y.data(), a, b)) << l;
    EXPECT_TRUE(same(&DotLoops::vec_f16, l, xh.data(), yh.data(), a, b)) << l;
    EXPECT_TRUE(same(&DotLoops::tile_f32, l, x.data(), y.data(), ta, tb)) << l;
    EXPECT_TRUE(same(&DotLoops::tile_f16, l, xh.data(), yh.data(), ta, tb)) << l;
  }
}

TEST(GgmlDot, TilesSumEachLaneAlongKThenReduce) {
  for (GgmlIsa isa : kBoth) {
    const int l = lanes(isa);
    std::vector<float> a(size_t(2 * l), 0.0f), b(a.size(), 1.0f);
    a[0] = 16777216.0f;
    a[size_t(l)] = -16777216.0f;  // same lane, next step: cancels before the reduction
    a[1] = 1.0f;
    EXPECT_EQ(tile_dot_f32(isa, int64_t(a.size()), a.data(), b.data()), 1.0f);
    EXPECT_TRUE(tiles_take(isa, 8, 2, l));
    EXPECT_FALSE(tiles_take(isa, 8, 1, l));   // one token: vec_dot
    EXPECT_FALSE(tiles_take(isa, 6, 2, l));   // rows not a multiple of 4
    EXPECT_FALSE(tiles_take(isa, 8, 2, l + 1));
  }
}

TEST(GgmlNorm, RmsNormIsTheDoubleSumsScaleThenTheWeight) {
  std::vector<float> x(100), w(100), y(100);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::cos(float(i)) * 3.0f;
    w[i] = 0.5f + 0.01f * float(i);
  }
  rms_norm_row(100, y.data(), x.data(), 1e-6f, w.data());
  double ss = 0;
  for (float v : x) ss += double(v) * double(v);
  const double scale = 1.0 / std::sqrt(ss / 100.0 + 1e-6);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i] * scale * w[i], 1e-5);
  const float s = 1.0f / std::sqrt(float(ss / 100.0) + 1e-6f);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y[i], (x[i] * s) * w[i]);
}

TEST(GgmlRope, TheCacheChainsTheAngleInFloatAndRotationKeepsNorms) {
  RopeParams rp{.n_dims = 64, .freq_base = 10000.0f};
  std::vector<float> cs(64);
  rope_cache(0, rp, nullptr, cs.data());
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(cs[size_t(2 * i)], 1.0f);
    EXPECT_EQ(cs[size_t(2 * i + 1)], 0.0f);
  }
  rope_cache(37, rp, nullptr, cs.data());
  const float step = std::pow(10000.0f, -2.0f / 64.0f);
  float theta = 37.0f;
  for (int i = 0; i < 32; ++i, theta *= step) {
    EXPECT_EQ(cs[size_t(2 * i)], std::cos(theta));
    EXPECT_NEAR(cs[size_t(2 * i)], std::cos(37.0 * std::pow(10000.0, -2.0 * i / 64.0)), 2e-5);
  }
  std::vector<float> factors(32, 2.0f);
  std::vector<float> cf(64);
  rope_cache(37, rp, factors.data(), cf.data());
  EXPECT_EQ(cf[2], std::cos(37.0f * step / 2.0f));
  for (bool neox : {false, true}) {
    std::vector<float> x(64), y(64);
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(i % 7) - 3.0f;
    rope_rotate(64, neox, cs.data(), x.data(), y.data());
    const int a = neox ? 5 : 10, b = neox ? 37 : 11;
    EXPECT_NEAR(x[size_t(a)] * x[size_t(a)] + x[size_t(b)] * x[size_t(b)],
                y[size_t(a)] * y[size_t(a)] + y[size_t(b)] * y[size_t(b)], 1e-4);
    EXPECT_EQ(y[size_t(a)], std::fma(x[size_t(a)], cs[10], -(x[size_t(b)] * cs[11])));
  }
}

TEST(GgmlRope, YarnMixesTheAnglesAndScalesTheMagnitude) {
  RopeParams rp{.n_dims = 32, .freq_base = 10000.0f, .freq_scale = 0.25f, .ext_factor = 1.0f, .n_ctx_orig = 4096};
  std::vector<float> cs(32);
  rope_cache(100, rp, nullptr, cs.data());
  const float mscale = 1.0f + 0.1f * std::log(4.0f);
  // The first pairs extrapolate (the plain angle), the last interpolate (a quarter of it).
  EXPECT_NEAR(cs[0], std::cos(100.0) * mscale, 1e-5);
  const double last = 100.0 * std::pow(10000.0, -30.0 / 32.0);
  EXPECT_NEAR(cs[30], std::cos(last * 0.25) * mscale, 1e-5);
}

TEST(GgmlRope, YarnFusesTheInterpolatedAngleLikeLibggmlCpu) {
  // theta_interp * (1 - ramp_mix) + theta_extrap * ramp_mix with the first product fused: the
  // values libggml-cpu.so (c392e50, gcc 12) computes for these pairs of the ramp, where fusing the
  // second product instead changes the last bits.
  const RopeParams rp{.n_dims = 32, .freq_base = 10000.0f, .freq_scale = 0.25f, .ext_factor = 1.0f,
                      .attn_factor = 1.3f, .n_ctx_orig = 4096};
  std::vector<float> cs(32);
  rope_cache(100, rp, nullptr, cs.data());
  EXPECT_EQ(cs[13], 0x1.da1c6ep-2f);
  EXPECT_EQ(cs[16], 0x1.26fd82p+0f);
  rope_cache(300, rp, nullptr, cs.data());
  EXPECT_EQ(cs[14], -0x1.790d16p-1f);
  EXPECT_EQ(cs[15], -0x1.48b5dap+0f);
  EXPECT_EQ(cs[16], -0x1.53ca9cp-1f);
  EXPECT_EQ(cs[17], 0x1.52b708p+0f);
}

}  // namespace
}  // namespace recur::ggml_arith
