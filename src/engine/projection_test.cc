// The hybrid forward pass at each kernel.gemm.precision: the default is f32 bit for bit, and
// against it the split precisions come closer than bf16 does, on F32 weights (packed per
// session) and BF16 weights (read in place).
#include "engine/projection.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/thread_pool.h"
#include "engine/model.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"

namespace recur {
namespace {

std::vector<float> logits_after(const Model& model, ThreadPool& pool, const char* precision, int steps) {
  Config knobs;
  if (precision != nullptr) {
    EXPECT_TRUE(knobs.set("kernel.gemm.precision", precision).has_value());
  }
  auto s = model.new_session(pool, steps, knobs);
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
  std::vector<float> out;
  for (int t = 0; t < steps; ++t) {
    auto l = (*s)->step(7 + 13 * t);
    EXPECT_TRUE(l.has_value());
    out.assign(l->begin(), l->end());
  }
  return out;
}

double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
    scale = std::max(scale, std::fabs(double(b[i])));
  }
  return diff / scale;
}

TEST(Projection, HybridPrecisionsOrderByAccuracyOnF32AndBf16Weights) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  for (auto dtype : {gguf::TensorType::kF32, gguf::TensorType::kBF16}) {
    auto w = synthetic_model({testing::tiny_hybrid_config(0), dtype, 9});
    ASSERT_TRUE(w.has_value());
    std::vector<std::byte> bytes = w->serialize();
    auto model = model_from_file(std::move(*gguf::parse(bytes, "p.gguf")));
    ASSERT_TRUE(model.has_value()) << model.error().message();
    const auto f32 = logits_after(**model, **pool, "f32", 8);
    EXPECT_EQ(logits_after(**model, **pool, nullptr, 8), f32) << "the default is f32";
    const double bf16 = rel_err(logits_after(**model, **pool, "bf16", 8), f32);
    const double x3 = rel_err(logits_after(**model, **pool, "bf16x3", 8), f32);
    const double x6 = rel_err(logits_after(**model, **pool, "bf16x6", 8), f32);
    EXPECT_GT(bf16, 1e-4) << "bf16 activations do change the logits";
    EXPECT_LT(x3, bf16 / 50) << gguf::tensor_type_name(uint32_t(dtype));
    EXPECT_LT(x6, 1e-5) << gguf::tensor_type_name(uint32_t(dtype));
    EXPECT_GT(x3, 0) << "bf16x3 is not f32";
  }
}

}  // namespace
}  // namespace recur
