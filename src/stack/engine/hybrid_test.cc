// The hybrid forward pass against the float64 implementation (engine/reference/hybrid_reference.h), plus
// activation health on every storage type and MoE routing.
#include "engine/hybrid.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/reference/hybrid_reference.h"
#include "engine/layers.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"

namespace recur {
namespace {

ModelConfig tiny_hybrid(int experts) { return testing::tiny_hybrid_config(experts); }

std::unique_ptr<Model> make(const ModelConfig& c, gguf::TensorType dtype, std::vector<std::byte>& storage) {
  auto w = synthetic_model({c, dtype, 3});
  EXPECT_TRUE(w.has_value()) << (w ? "" : w.error().message());
  storage = w->serialize();
  auto f = gguf::parse(storage, "hybrid.gguf");
  EXPECT_TRUE(f.has_value());
  auto m = model_from_file(std::move(*f));
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  return std::move(*m);
}

void expect_matches_reference(int experts) {
  ModelConfig c = tiny_hybrid(experts);
  c.tied_embeddings = true;
  std::vector<std::byte> storage;
  auto model = make(c, gguf::TensorType::kF32, storage);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  for (const char* variant : {"vtile", "vtile_recip", "hoisted", "hoisted_recip"}) {
    Config knobs;
    ASSERT_TRUE(knobs.set("engine.kda.decode_variant", variant).has_value());
    auto session = model->new_session(**pool, 16, knobs);
    ASSERT_TRUE(session.has_value());
    HybridReference ref(static_cast<const HybridModel&>(*model).file(), model->config());
    for (int token : {1, 200, 33, 399, 7, 150, 64, 2}) {
      auto logits = (*session)->step(token);
      ASSERT_TRUE(logits.has_value()) << logits.error().message();
      std::vector<double> want = ref.step(token);
      double err = 0, scale = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        err = std::max(err, std::fabs((*logits)[i] - want[i]));
        scale = std::max(scale, std::fabs(want[i]));
      }
      EXPECT_LT(err, 2e-4 * std::max(1.0, scale)) << variant << " token " << token << " experts " << experts;
    }
  }
}

TEST(Hybrid, DenseMatchesTheFloat64Reference) { expect_matches_reference(0); }
TEST(Hybrid, MoeWithSharedExpertMatchesTheFloat64Reference) { expect_matches_reference(4); }

// engine.numerics=f64_reference: the session is the float64 reference, on bf16 weights too.
TEST(Hybrid, F64ReferenceSessionFollowsTheReference) {
  std::vector<std::byte> storage;
  auto model = make(tiny_hybrid(4), gguf::TensorType::kBF16, storage);
  auto pool = ThreadPool::create({.threads = 1, .pin = false});
  Config knobs;
  ASSERT_TRUE(knobs.set("engine.numerics", "f64_reference").has_value());
  auto session = model->new_session(**pool, 8, knobs);
  ASSERT_TRUE(session.has_value()) << session.error().message();
  auto native = model->new_session(**pool, 8, Config());
  HybridReference ref(static_cast<const HybridModel&>(*model).file(), model->config());
  double worst = 0;
  for (int token : {3, 99, 250}) {
    auto got = (*session)->step(token);
    auto fast = (*native)->step(token);
    ASSERT_TRUE(got.has_value() && fast.has_value());
    std::vector<double> want = ref.step(token);
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ((*got)[i], float(want[i])) << i;
      worst = std::max(worst, std::fabs(double((*fast)[i]) - want[i]));
    }
  }
  EXPECT_GT(worst, 0) << "the native fp32 pass is a different computation";
  EXPECT_LT(worst, 1e-3);
}

TEST(Hybrid, ActivationsStayFiniteAndAliveThroughEveryLayer) {
  for (auto dtype : {gguf::TensorType::kF32, gguf::TensorType::kF16, gguf::TensorType::kBF16, gguf::TensorType::kQ8_0}) {
    for (int experts : {0, 4}) {
      std::vector<std::byte> storage;
      auto model = make(tiny_hybrid(experts), dtype, storage);
      auto pool = ThreadPool::create({.threads = 1, .pin = false});
      auto session = model->new_session(**pool, 40, Config());
      ASSERT_TRUE(session.has_value());
      std::vector<double> rms(size_t(model->config().n_layers));
      (*session)->set_layer_observer([&](int layer, std::span<const float> x) {
        double ss = 0;
        for (float v : x) ss += std::isfinite(v) ? double(v) * v : 1e300;
        rms[size_t(layer)] = std::sqrt(ss / double(x.size()));
      });
      for (int t = 0; t < 32; ++t) {
        auto logits = (*session)->step(5 + 11 * t);
        ASSERT_TRUE(logits.has_value());
        for (size_t l = 0; l < rms.size(); ++l) {
          EXPECT_GT(rms[l], 0.3) << "layer " << l << " collapsed";
          EXPECT_LT(rms[l], 3.0) << "layer " << l << " exploded or went non-finite";
        }
      }
    }
  }
}

TEST(Hybrid, GeneratesDeterministically) {
  std::vector<std::byte> storage;
  auto model = make(tiny_hybrid(4), gguf::TensorType::kQ8_0, storage);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  GenerateOptions o;
  o.max_new_tokens = 10;
  o.stop_at_eos = false;
  auto a = generate(*model, **pool, "hello hybrid", o, [](std::string_view) {});
  auto b = generate(*model, **pool, "hello hybrid", o, [](std::string_view) {});
  ASSERT_TRUE(a.has_value() && b.has_value());
  EXPECT_EQ(a->tokens, b->tokens);
  Config bad;
  EXPECT_FALSE(bad.set("engine.kda.decode_variant", "fastest").has_value());
}

TEST(Routing, TopKRenormalizes) {
  std::vector<float> logits = {0.1f, 2.0f, -1.0f, 2.0f, 0.5f};
  Route r = route_top_k(logits, 2);
  EXPECT_EQ(r.experts, (std::vector<int>{1, 3})) << "ties keep the lower index first";
  EXPECT_NEAR(r.weights[0], 0.5, 1e-6);
  EXPECT_NEAR(r.weights[0] + r.weights[1], 1.0, 1e-6);
  Route r3 = route_top_k(logits, 3);
  EXPECT_EQ(r3.experts[2], 4);
  double e1 = std::exp(2.0), e4 = std::exp(0.5);
  EXPECT_NEAR(r3.weights[2], e4 / (2 * e1 + e4), 1e-6);
}

}  // namespace
}  // namespace recur
