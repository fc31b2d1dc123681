// ggml's MoE routing and combine (ggml_moe.h) against test-local compositions of ggml_arith's
// functions in llm_build_moe_ffn's order, bit for bit.
#include "kernels/ggml_arith/ggml_moe.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/gemm/gemm_test_util.h"
namespace recur::ggml_arith {
namespace {

constexpr GgmlIsa kIsas[] = {GgmlIsa::kAvx512, GgmlIsa::kAvx2};

bool same_bits(float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; }

std::vector<float> normal(size_t n, uint64_t seed) { return gemm::testing::random_values(n, seed); }

TEST(GgmlMoe, ArgsortIsGgmlsExchangeSortWhoseTiesLeaveIndexOrder) {
  const float x[] = {1, 2, 2, 3};
  int32_t order[4];
  argsort_desc(4, x, order);
  EXPECT_EQ(std::vector<int32_t>(order, order + 4), (std::vector<int32_t>{3, 2, 1, 0}));
  const float y[] = {1, 3, 3, 2, 3};
  int32_t o5[5];
  argsort_desc(5, y, o5);
  EXPECT_EQ(std::vector<int32_t>(o5, o5 + 5), (std::vector<int32_t>{1, 2, 4, 3, 0}));
}

TEST(GgmlMoe, TiedProbabilitiesAreSelectedInArgsortsOrder) {
  // Logits 1 and 1 give equal probabilities; ggml picks expert 2 before expert 1.
  const float logits[] = {0, 1, 1, 2};
  float probs[8], w[2];
  int32_t ids[2];
  moe_route(GgmlIsa::kAvx512, {.experts = 4, .k = 2}, logits, probs, ids, w);
  EXPECT_EQ(ids[0], 3);
  EXPECT_EQ(ids[1], 2);
}

// llm_build_moe_ffn's routing composed here from ggml_arith's softmax / sigmoid.
void composed_route(GgmlIsa isa, const MoeRouting& r, const float* logits, int32_t* ids, float* w) {
  std::vector<float> p(size_t(r.experts)), sel(size_t(r.experts));
  if (r.gate == MoeGate::kSoftmax) soft_max_row(isa, r.experts, p.data(), logits, 1.0f, nullptr);
  else sigmoid_row(r.experts, p.data(), logits);
  for (int64_t e = 0; e < r.experts; ++e) sel[size_t(e)] = r.bias ? p[size_t(e)] + r.bias[e] : p[size_t(e)];
  std::vector<int32_t> o(size_t(r.experts));
  for (int64_t e = 0; e < r.experts; ++e) o[size_t(e)] = int32_t(e);
  for (int64_t j = 0; j < r.experts; ++j)
    for (int64_t k = j + 1; k < r.experts; ++k)
      if (sel[size_t(o[size_t(j)])] < sel[size_t(o[size_t(k)])]) std::swap(o[size_t(j)], o[size_t(k)]);
  double sum = 0;
  for (int64_t j = 0; j < r.k; ++j) sum += p[size_t(o[size_t(j)])];
  for (int64_t j = 0; j < r.k; ++j) {
    ids[j] = o[size_t(j)];
    float v = p[size_t(o[size_t(j)])];
    if (r.renormalize) v = v / float(sum);
    w[j] = v * r.scale;
  }
}

TEST(GgmlMoe, RoutingIsSoftmaxOrSigmoidThenArgsortThenWeights) {
  const std::vector<float> bias = normal(64, 5);
  for (GgmlIsa isa : kIsas)
    for (int64_t experts : {8, 60})
      for (int variant = 0; variant < 4; ++variant) {
        MoeRouting r{.gate = variant % 2 ? MoeGate::kSigmoid : MoeGate::kSoftmax, .experts = experts, .k = 3,
                     .bias = variant == 3 ? bias.data() : nullptr, .renormalize = variant >= 2,
                     .scale = variant == 3 ? 2.5f : 1.0f};
        for (uint64_t seed = 1; seed <= 20; ++seed) {
          const std::vector<float> logits = normal(size_t(experts), seed);
          std::vector<float> probs(size_t(2 * experts)), w(3), want_w(3);
          std::vector<int32_t> ids(3), want_ids(3);
          moe_route(isa, r, logits.data(), probs.data(), ids.data(), w.data());
          composed_route(isa, r, logits.data(), want_ids.data(), want_w.data());
          EXPECT_EQ(ids, want_ids) << experts << " " << variant << " " << seed;
          for (int j = 0; j < 3; ++j) EXPECT_TRUE(same_bits(w[size_t(j)], want_w[size_t(j)])) << variant << " " << seed;
        }
      }
}

TEST(GgmlMoe, CombineWeighsThenAddsInSelectionOrderFromTheFirstProduct) {
  const int64_t k = 4, dim = 256;
  const std::vector<float> outs = normal(size_t(k * dim), 3), w = {0.4f, 0.3f, 0.2f, 0.1f};
  std::vector<float> y(static_cast<size_t>(dim));
  moe_combine(k, dim, outs.data(), w.data(), y.data());
  int other_order_differs = 0;
  for (int64_t i = 0; i < dim; ++i) {
    float want = outs[size_t(i)] * w[0];
    for (int64_t j = 1; j < k; ++j) want = want + outs[size_t(j * dim + i)] * w[size_t(j)];
    EXPECT_TRUE(same_bits(y[size_t(i)], want)) << i;
    float reversed = 0;  // another order (recur's own adds each expert in expert order from 0)
    for (int64_t j = k - 1; j >= 0; --j) reversed = reversed + w[size_t(j)] * outs[size_t(j * dim + i)];
    other_order_differs += reversed != y[size_t(i)];
  }
  EXPECT_GT(other_order_differs, 0) << "the order decides bits";
}

TEST(GgmlMoe, SharedGateIsSiluOverTheLogitNotTheSigmoidsBits) {
  int differs = 0;
  for (GgmlIsa isa : kIsas)
    for (float g : normal(2000, 9)) {
      float silu = 0;
      silu_row(isa, 1, &silu, &g);
      EXPECT_TRUE(same_bits(silu_gate(isa, g), silu / g)) << g;
      differs += silu_gate(isa, g) != 1.0f / (1.0f + std::exp(-g));
    }
  EXPECT_GT(differs, 0);
}

}  // namespace
}  // namespace recur::ggml_arith
