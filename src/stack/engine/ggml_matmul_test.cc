// engine.ggml_arithmetic's matmuls and MoE (ggml_matmul.h, blocks/moe_ffn.cc): every output of
// matmul_ggml is the ggml_arith dot ggml would take (tinyBLAS tile or vec_dot, F16 weights
// against f16-rounded activations), whatever the pool and the weights' layout; a qwen2moe model
// runs under the knob with its router computed as ggml's vec_dot.
#include "engine/ggml_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "core/convert.h"
#include "core/thread_pool.h"
#include "engine/architectures.h"
#include "engine/model.h"
#include "engine/op_capture.h"
#include "engine/synthetic.h"
#include "engine/transformer.h"
#include "kernels/gemm/gemm_test_util.h"

namespace recur {
namespace {

using ggml_arith::GgmlIsa;

struct TestWeight {
  std::vector<std::byte> bytes;
  Weight w;
};

TestWeight random_weight(gguf::TensorType type, int64_t rows, int64_t cols, uint64_t seed) {
  const auto format = type == gguf::TensorType::kF32 ? gemm::WeightFormat::kF32 : gemm::WeightFormat::kF16;
  TestWeight t{.bytes = gemm::testing::encode(format, gemm::testing::random_values(size_t(rows * cols), seed), rows, cols)};
  t.w = Weight{"w", type, rows, cols, t.bytes.data()};
  return t;
}

std::vector<float> normal(size_t n, uint64_t seed) { return gemm::testing::random_values(n, seed); }

// ggml's mul_mat composed from ggml_arith: activations to f16 for F16 weights, then per output
// the tile dot or the vec_dot loop.
std::vector<float> composed(GgmlIsa isa, const TestWeight& t, const std::vector<float>& x, int64_t m, bool tiles) {
  const Weight& w = t.w;
  std::vector<float> y(size_t(m * w.rows));
  std::vector<uint16_t> xh(x.size());
  for (size_t i = 0; i < x.size(); ++i) xh[i] = fp32_to_fp16(x[i]);
  for (int64_t r = 0; r < w.rows; ++r)
    for (int64_t i = 0; i < m; ++i) {
      float& out = y[size_t(i * w.rows + r)];
      if (w.type == gguf::TensorType::kF32) {
        const float* a = reinterpret_cast<const float*>(t.bytes.data()) + r * w.cols;
        out = tiles ? ggml_arith::tile_dot_f32(isa, w.cols, a, x.data() + i * w.cols)
                    : ggml_arith::vec_dot_f32(isa, w.cols, a, x.data() + i * w.cols);
      } else {
        const uint16_t* a = reinterpret_cast<const uint16_t*>(t.bytes.data()) + r * w.cols;
        out = tiles ? ggml_arith::tile_dot_f16(isa, w.cols, a, xh.data() + i * w.cols)
                    : ggml_arith::vec_dot_f16(isa, w.cols, a, xh.data() + i * w.cols);
      }
    }
  return y;
}

std::vector<float> run(const Weight& w, const std::vector<float>& x, int64_t m, ThreadPool* pool, GgmlMatmul g) {
  std::vector<float> y(size_t(m * w.rows));
  matmul_ggml(w, x.data(), m, y.data(), pool, g);
  return y;
}

TEST(GgmlMatmul, EachOutputIsGgmlsTileOrVecDotOnAnyPool) {
  auto pool = ThreadPool::create({.threads = 3, .pin = false});
  ASSERT_TRUE(pool.has_value());
  for (GgmlIsa isa : {GgmlIsa::kAvx512, GgmlIsa::kAvx2})
    for (auto type : {gguf::TensorType::kF32, gguf::TensorType::kF16})
      for (int64_t rows : {8, 6})
        for (int64_t cols : {64, 72})  // 72: tinyBLAS refuses k % 16 (AVX-512), vec_dot has a tail
          for (int64_t m : {1, 3}) {
            const TestWeight t = random_weight(type, rows, cols, uint64_t(rows * cols + m));
            const std::vector<float> x = normal(size_t(m * cols), 11);
            const bool tiles = ggml_arith::tiles_take(isa, rows, m, cols);
            const std::vector<float> want = composed(isa, t, x, m, tiles);
            EXPECT_EQ(run(t.w, x, m, nullptr, {.isa = isa}), want) << rows << "x" << cols << " m=" << m;
            EXPECT_EQ(run(t.w, x, m, pool->get(), {.isa = isa}), want) << "3 threads";
          }
}

TEST(GgmlMatmul, ExpertsAndTheLastLayersSingleOutputTakeTheVecDotLoop) {
  const TestWeight t = random_weight(gguf::TensorType::kF16, 8, 64, 4);
  const std::vector<float> x = normal(3 * 64, 12);
  const std::vector<float> tiles = composed(GgmlIsa::kAvx512, t, x, 3, true);
  const std::vector<float> vec = composed(GgmlIsa::kAvx512, t, x, 3, false);
  ASSERT_NE(tiles, vec) << "the two orders differ on this data";
  EXPECT_EQ(run(t.w, x, 3, nullptr, {.isa = GgmlIsa::kAvx512}), tiles);
  EXPECT_EQ(run(t.w, x, 3, nullptr, {.isa = GgmlIsa::kAvx512, .vec_dot_only = true}), vec);
  {
    const GgmlTileTokensScope one_output(1);
    EXPECT_EQ(run(t.w, x, 3, nullptr, {.isa = GgmlIsa::kAvx512}), vec);
  }
  EXPECT_EQ(run(t.w, x, 3, nullptr, {.isa = GgmlIsa::kAvx512}), tiles) << "the scope ended";
}

TEST(GgmlMatmul, RegroupedF16WeightsGiveTheRowLayoutsBits) {
  const TestWeight t = random_weight(gguf::TensorType::kF16, 32, 64, 5);
  std::vector<std::byte> grouped(t.bytes.size());
  auto g = regroup_weight(t.w, grouped.data());
  ASSERT_TRUE(g.has_value()) << g.error().message();
  ASSERT_TRUE(g->regrouped);
  const std::vector<float> x = normal(2 * 64, 13);
  for (int64_t m : {1, 2})
    EXPECT_EQ(run(*g, x, m, nullptr, {.isa = GgmlIsa::kAvx512}), run(t.w, x, m, nullptr, {.isa = GgmlIsa::kAvx512}));
}

// A qwen2moe model (4 experts, top 2, a gated shared expert) with F16 weights.
std::unique_ptr<Model> qwen2moe_f16(std::vector<std::byte>& storage) {
  auto arch = find_architecture("qwen2moe", "test");
  EXPECT_TRUE(arch.has_value());
  ModelConfig c;
  c.arch = (*arch)->arch;
  (*arch)->features(c);
  c.dim = 64;
  c.n_layers = 2;
  c.n_heads = 4;
  c.n_kv_heads = 2;
  c.head_dim = 16;
  c.ffn_dim = 64;
  c.shared_ffn_dim = 96;
  c.vocab = 400;
  c.context = 64;
  c.rope_theta = 10000.0f;
  c.n_experts = 4;
  c.n_experts_used = 2;
  auto w = synthetic_model({c, gguf::TensorType::kF16, 7});
  EXPECT_TRUE(w.has_value());
  storage = w->serialize();
  auto m = model_from_file(std::move(*gguf::parse(storage, "qwen2moe.gguf")));
  EXPECT_TRUE(m.has_value()) << (m ? "" : m.error().message());
  return m ? std::move(*m) : nullptr;
}

TEST(GgmlMoe, Qwen2MoeRunsUnderTheKnobWithGgmlsRouterAndDiffersFromRecursOrder) {
  std::vector<std::byte> storage;
  std::unique_ptr<Model> model = qwen2moe_f16(storage);
  ASSERT_NE(model, nullptr);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  const std::vector<TokenId> prompt = {1, 200, 33, 399, 7};
  auto logits = [&](const char* ggml, OpCapture* capture) {
    Config knobs;
    EXPECT_TRUE(knobs.set("engine.ggml_arithmetic", ggml).has_value());
    auto s = model->new_session(**pool, 32, knobs);
    EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
    std::vector<float> out;
    auto p = (*s)->prefill(prompt);  // several rows: tiles, the last layer's one output, the combine
    EXPECT_TRUE(p.has_value()) << (p ? "" : p.error().message());
    out.assign(p->begin(), p->end());
    (*s)->set_op_tap(capture);
    for (TokenId t : {5, 9, 300}) {
      if (capture != nullptr) capture->begin_step();
      auto l = (*s)->step(t);
      EXPECT_TRUE(l.has_value());
      out.insert(out.end(), l->begin(), l->end());
    }
    return out;
  };
  OpCapture capture;
  const std::vector<float> off = logits("off", nullptr), on = logits("avx512", &capture);
  ASSERT_EQ(off.size(), on.size());
  double diff = 0, scale = 0;
  for (size_t i = 0; i < on.size(); ++i) {
    ASSERT_TRUE(std::isfinite(on[i]));
    diff = std::max(diff, std::fabs(double(on[i]) - off[i]));
    scale = std::max(scale, std::fabs(double(off[i])));
  }
  EXPECT_GT(diff, 0.0) << "ggml's orders change some bits";
  EXPECT_LT(diff / scale, 1e-2) << "and only by rounding";
  // Each decode step's router logits: ggml's vec_dot_f16 of each router row with the normed row
  // rounded to f16.
  const auto& tm = static_cast<const TransformerModel&>(*model);
  for (int l = 0; l < 2; ++l) {
    const OpCapture::Op* norm = capture.find(fmt::format("layer.{}.ffn_norm", l));
    const OpCapture::Op* router = capture.find(fmt::format("layer.{}.ffn.router", l));
    ASSERT_TRUE(norm != nullptr && router != nullptr);
    const Weight& w = tm.layers[size_t(l)].router;
    ASSERT_EQ(w.type, gguf::TensorType::kF16) << "recur's F16 files store the router F16";
    for (int step = 0; step < capture.steps(); ++step) {
      std::vector<uint16_t> x;
      for (double v : norm->steps[size_t(step)]) x.push_back(fp32_to_fp16(float(v)));
      for (int64_t e = 0; e < w.rows; ++e) {
        const float want = ggml_arith::vec_dot_f16(GgmlIsa::kAvx512, w.cols,
                                                   reinterpret_cast<const uint16_t*>(w.data) + e * w.cols, x.data());
        EXPECT_EQ(float(router->steps[size_t(step)][size_t(e)]), want) << "layer " << l << " expert " << e;
      }
    }
  }
}

}  // namespace
}  // namespace recur
