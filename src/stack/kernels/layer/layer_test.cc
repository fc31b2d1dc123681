// Behaviour of the layer kernels that the reference check (layer_check_test.cc) does not pin:
// RoPE pair layouts on known angles, routing ties and renormalization, the Q8_0 block layout,
// argument errors, in-place use, and sampling statistics (chi-square over many seeded draws).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "core/convert.h"
#include "core/cpu_features.h"
#include "kernels/layer/layer.h"

namespace recur::kernels {
namespace {

TEST(Rope, LayoutsRotateTheirOwnPairs) {
  // d = 4: pair 0 turns by pos * 1, pair 1 by pos * theta^-1/2 = pos / 100.
  const std::vector<float> x = {1, 2, 3, 4};
  for (Isa isa : runnable_isas()) {
    std::vector<float> y(4);
    ASSERT_TRUE(rope(x.data(), y.data(), 1, 1, 4, 1, 10000.0, RopeLayout::kInterleaved, layer_ops(isa)));
    const double c0 = std::cos(1.0), s0 = std::sin(1.0), c1 = std::cos(0.01), s1 = std::sin(0.01);
    EXPECT_NEAR(y[0], 1 * c0 - 2 * s0, 1e-6) << isa_name(isa);
    EXPECT_NEAR(y[1], 1 * s0 + 2 * c0, 1e-6);
    EXPECT_NEAR(y[2], 3 * c1 - 4 * s1, 1e-6);
    EXPECT_NEAR(y[3], 3 * s1 + 4 * c1, 1e-6);
    ASSERT_TRUE(rope(x.data(), y.data(), 1, 1, 4, 1, 10000.0, RopeLayout::kHalfSplit, layer_ops(isa)));
    EXPECT_NEAR(y[0], 1 * c0 - 3 * s0, 1e-6);
    EXPECT_NEAR(y[2], 1 * s0 + 3 * c0, 1e-6);
    EXPECT_NEAR(y[1], 2 * c1 - 4 * s1, 1e-6);
    EXPECT_NEAR(y[3], 2 * s1 + 4 * c1, 1e-6);
  }
  std::vector<float> y(3);
  auto bad = rope(x.data(), y.data(), 1, 1, 3, 0, 10000.0, RopeLayout::kInterleaved);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("even"), std::string::npos);
}

TEST(RmsNormResidual, InPlaceMatchesOutOfPlace) {
  const int64_t rows = 3, n = 45;
  std::vector<float> x(rows * n), r(rows * n), w(n);
  for (size_t i = 0; i < x.size(); ++i) {
    x[i] = std::sin(float(i));
    r[i] = std::cos(float(3 * i));
  }
  for (size_t i = 0; i < w.size(); ++i) w[i] = 0.5f + float(i % 5) * 0.1f;
  for (Isa isa : runnable_isas()) {
    std::vector<float> h(x.size()), y(x.size()), y2(x.size()), xi = x;
    rmsnorm_residual(x.data(), r.data(), w.data(), h.data(), y.data(), rows, n, 1e-6f, layer_ops(isa));
    rmsnorm_residual(xi.data(), r.data(), w.data(), xi.data(), y2.data(), rows, n, 1e-6f, layer_ops(isa));
    EXPECT_EQ(h, xi) << isa_name(isa);
    EXPECT_EQ(y, y2) << isa_name(isa);
    EXPECT_FLOAT_EQ(h[7], x[7] + r[7]);
  }
}

TEST(RouteTopk, TiesGoToLowerIndexAndWeightsRenormalize) {
  const std::vector<float> logits = {0.5f, 2.0f, 2.0f, -1.0f, 2.0f, 0.5f};  // one token, 6 experts
  std::vector<int32_t> ids(4);
  std::vector<float> w(4);
  ASSERT_TRUE(route_topk(logits.data(), 1, 6, 4, RouteScore::kSigmoid, true, ids.data(), w.data()));
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 2, 4, 0}));
  EXPECT_NEAR(w[0] + w[1] + w[2] + w[3], 1.0f, 1e-6f);
  EXPECT_FLOAT_EQ(w[0], w[2]);
  ASSERT_TRUE(route_topk(logits.data(), 1, 6, 2, RouteScore::kSoftmax, false, ids.data(), w.data()));
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - 2.0);
  EXPECT_NEAR(w[0], 1.0 / sum, 1e-6);
  EXPECT_FALSE(route_topk(logits.data(), 1, 6, 7, RouteScore::kSoftmax, false, ids.data(), w.data()));
}

TEST(GroupedGemm, RejectsDecreasingOffsets) {
  std::vector<float> x(8), w(8), y(8);
  const std::vector<int64_t> off = {0, 2, 1};
  auto s = grouped_gemm(x.data(), w.data(), y.data(), off, 2, 2);
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("offsets[2]=1 < offsets[1]=2"), std::string::npos) << s.error().to_string();
}

TEST(Embedding, Q8_0BlocksAreGgufLayoutAndIdsAreChecked) {
  // Two rows of 32: block = fp16 d (little endian) then 32 int8.
  std::vector<uint8_t> table(2 * 34);
  for (int row = 0; row < 2; ++row) {
    const uint16_t d = fp32_to_fp16(row == 0 ? 0.5f : -0.25f);
    std::memcpy(&table[size_t(row) * 34], &d, 2);
    for (int i = 0; i < 32; ++i) table[size_t(row) * 34 + 2 + size_t(i)] = uint8_t(int8_t(i - 16));
  }
  const std::vector<int32_t> ids = {1, 0};
  for (Isa isa : runnable_isas()) {
    std::vector<float> out(64);
    ASSERT_TRUE(embedding_gather(table.data(), TableType::kQ8_0, 2, 32, ids, out.data(), layer_ops(isa)));
    for (int i = 0; i < 32; ++i) {
      EXPECT_EQ(out[size_t(i)], -0.25f * float(i - 16)) << isa_name(isa) << " " << i;
      EXPECT_EQ(out[32 + size_t(i)], 0.5f * float(i - 16));
    }
  }
  std::vector<float> out(64);
  const std::vector<int32_t> bad = {0, 2};
  auto s = embedding_gather(table.data(), TableType::kQ8_0, 2, 32, bad, out.data());
  ASSERT_FALSE(s);
  EXPECT_NE(s.error().message().find("ids[1]=2 is outside [0, 2)"), std::string::npos) << s.error().to_string();
  EXPECT_FALSE(embedding_gather(table.data(), TableType::kQ8_0, 2, 31, ids, out.data()));
}

TEST(Sample, GreedyTakesTheFirstMaximum) {
  const std::vector<float> logits = {1, 3, 0, 3, -2};
  int32_t t = -1;
  ASSERT_TRUE(sample(logits.data(), 1, 5, {.temperature = 0}, &t));
  EXPECT_EQ(t, 1);
  EXPECT_FALSE(sample(logits.data(), 1, 5, {.temperature = 1, .top_p = 0}, &t));
}

// Pearson chi-square of counts against probabilities.
double chi_square(const std::vector<int64_t>& counts, const std::vector<double>& p, int64_t draws) {
  double chi = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * double(draws);
    chi += (double(counts[i]) - e) * (double(counts[i]) - e) / e;
  }
  return chi;
}

TEST(Sample, DrawsFollowTemperatureAndTopP) {
  const std::vector<float> base = {2.0f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f, 1.5f, -3.0f};
  const int64_t V = int64_t(base.size()), draws = 40000;
  std::vector<float> logits;
  for (int64_t r = 0; r < draws; ++r) logits.insert(logits.end(), base.begin(), base.end());
  for (float temp : {1.0f, 0.6f}) {
    for (float top_p : {1.0f, 0.8f}) {
      // Expected: softmax(l / T), restricted to the nucleus (by logit) and renormalized.
      std::vector<double> p(static_cast<size_t>(V));
      double total = 0;
      for (int64_t i = 0; i < V; ++i) total += p[size_t(i)] = std::exp(double(base[size_t(i)]) / temp);
      std::vector<int64_t> order(static_cast<size_t>(V));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) { return base[size_t(a)] > base[size_t(b)]; });
      double acc = 0;
      std::vector<bool> kept(static_cast<size_t>(V), false);
      for (int64_t j = 0; j < V && !(top_p < 1 && acc >= double(top_p) * total); ++j) {
        acc += p[size_t(order[size_t(j)])];
        kept[size_t(order[size_t(j)])] = true;
      }
      std::vector<double> want;
      std::vector<int64_t> idx;
      for (int64_t i = 0; i < V; ++i)
        if (kept[size_t(i)]) {
          want.push_back(p[size_t(i)] / acc);
          idx.push_back(i);
        }
      std::vector<int32_t> out(static_cast<size_t>(draws));
      const SampleParams sp{.temperature = temp, .top_p = top_p, .seed = 42};
      ASSERT_TRUE(sample(logits.data(), draws, V, sp, out.data()));
      std::vector<int64_t> counts(static_cast<size_t>(V), 0);
      for (int32_t t : out) ++counts[size_t(t)];
      std::vector<int64_t> kept_counts;
      int64_t outside = 0;
      for (int64_t i = 0; i < V; ++i) {
        if (kept[size_t(i)]) kept_counts.push_back(counts[size_t(i)]);
        else outside += counts[size_t(i)];
      }
      EXPECT_EQ(outside, 0) << "temp " << temp << " top_p " << top_p;
      // The 1e-6 upper quantile of chi-square with <= 7 degrees of freedom is below 40.
      EXPECT_LT(chi_square(kept_counts, want, draws), 40.0) << "temp " << temp << " top_p " << top_p;
      // Deterministic given the seed; another seed changes some draws.
      std::vector<int32_t> again(out.size()), other(out.size());
      ASSERT_TRUE(sample(logits.data(), draws, V, sp, again.data()));
      ASSERT_TRUE(sample(logits.data(), draws, V, {.temperature = temp, .top_p = top_p, .seed = 43}, other.data()));
      EXPECT_EQ(out, again);
      EXPECT_NE(out, other);
    }
  }
}

}  // namespace
}  // namespace recur::kernels
