// measure_op_errors localizes a discrepancy to the op that introduces it: bf16 all-reduces
// first show at the first all-reduce, bf16 activations at the first projection, and a
// configuration against itself has no error anywhere.
#include "gate/op_errors.h"

#include <gtest/gtest.h>

#include "core/thread_pool.h"
#include "engine/synthetic.h"
#include "engine/op_capture.h"
#include "engine/test_models.h"
#include "gate/synthetic_model.h"

namespace recur::gate {
namespace {

class OpErrors : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = synthetic_model({recur::testing::tiny_hybrid_config(0), gguf::TensorType::kBF16, 5});
    ASSERT_TRUE(w.has_value()) << w.error().message();
    bytes_ = w->serialize();
    auto m = model_from_file(std::move(*gguf::parse(bytes_, "ops.gguf")));
    ASSERT_TRUE(m.has_value()) << m.error().message();
    model_ = std::move(*m);
    pool_ = std::move(*ThreadPool::create({.threads = 1, .pin = false}));
  }
  NamedConfig arm(std::string name, std::vector<std::pair<const char*, const char*>> knobs) {
    NamedConfig a{std::move(name), Config()};
    for (auto [k, v] : knobs) EXPECT_TRUE(a.config.set(k, v).has_value());
    return a;
  }
  Result<OpErrorsResult> run(const NamedConfig& a, const NamedConfig& b) {
    OpErrorOptions o;
    o.decode_tokens = 6;
    o.tolerance = 1e-4;
    return measure_op_errors(*model_, "ops.gguf", *pool_, o, a, b);
  }
  double share(const Feedback& f, std::string_view component) {
    for (const Attribution& x : f.attribution)
      if (x.component == component) return x.share;
    return 0;
  }

  std::vector<std::byte> bytes_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<ThreadPool> pool_;
};

TEST_F(OpErrors, AConfigurationAgreesWithItselfAtEveryOp) {
  auto r = run(arm("x", {{"engine.tp", "2"}}), arm("y", {{"engine.tp", "2"}}));
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_TRUE(r->first_over.empty());
  for (const OpError& e : r->ops) EXPECT_EQ(e.max_rel_err, 0) << e.name;
  EXPECT_EQ(r->feedback.verdict, Verdict::kConfirmed);
  EXPECT_GT(r->ops.size(), 40u) << "every layer's ops are tapped";
  EXPECT_EQ(r->ops.front().name, "embed");
  EXPECT_EQ(r->ops.back().name, "lm_head");
}

TEST_F(OpErrors, Bf16AllReduceIsLocalizedToTheFirstAllReduce) {
  auto r = run(arm("cand", {{"engine.tp", "4"}, {"engine.tp.reduce_dtype", "bf16"}}), arm("ref", {}));
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->first_over, "layer.0.kda.all_reduce");
  EXPECT_EQ(r->feedback.verdict, Verdict::kRefuted);
  EXPECT_GT(share(r->feedback, "op:all_reduce"), 0.3);
  EXPECT_TRUE(validate_feedback(r->feedback).has_value());
}

TEST_F(OpErrors, Bf16ActivationsAreLocalizedToTheFirstProjection) {
  auto r = run(arm("cand", {{"kernel.gemm.precision", "bf16"}}), arm("ref", {}));
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->first_over, "layer.0.kda.q_proj");
  EXPECT_GT(share(r->feedback, "kernel:gemm"), 0.3);
  EXPECT_EQ(share(r->feedback, "op:all_reduce"), 0) << "one rank: no collective adds error";
  auto x3 = run(arm("cand", {{"kernel.gemm.precision", "bf16x3"}}), arm("ref", {}));
  ASSERT_TRUE(x3.has_value());
  EXPECT_LT(x3->ops.back().max_rel_err, r->ops.back().max_rel_err / 20) << "bf16x3 logits far closer than bf16's";
}

// An fp8 KV cache in the one attention layer (layer 3 of kkka): the attention core adds the
// error, and since that layer adds nearly all of engine:attention's error the component is
// named with the layer, so a per-layer knob can be bound to it.
TEST_F(OpErrors, OneLayersKvCacheIsNamedWithItsLayer) {
  auto r = run(arm("cand", {{"engine.kv_dtype.layer[3]", "fp8_e4m3"}}), arm("ref", {}));
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->first_over, "layer.3.attn.core");
  ASSERT_FALSE(r->feedback.attribution.empty());
  EXPECT_EQ(r->feedback.attribution.front().component, "engine:attention/layer[3]");
  EXPECT_GT(r->feedback.attribution.front().share, 0.5);
  EXPECT_NE(r->feedback.attribution.front().evidence.find("in that layer"), std::string::npos);
  // Error spread over every layer keeps the plain component (bf16 all-reduces in each layer).
  auto spread = run(arm("cand", {{"engine.tp", "4"}, {"engine.tp.reduce_dtype", "bf16"}}), arm("ref", {}));
  ASSERT_TRUE(spread.has_value());
  EXPECT_GT(share(spread->feedback, "op:all_reduce"), 0.3);
}

// The MLA rows' leading dense layer is wider than their experts: its FFN ops are captured at
// its own width (before, the capture sized them by the experts' ffn_dim and wrote past the end),
// split across TP ranks as one whole, so op-by-op attribution runs on deepseek2 and kimi-linear.
TEST(OpCaptureMla, TheLeadingDenseLayersFfnIsCapturedAtItsOwnWidth) {
  for (const char* arch : {"deepseek2", "kimi-linear"}) {
    SyntheticModel m{.arch = arch, .dim = 64, .layers = 3, .heads = 4, .ffn = 32, .vocab = 400, .context = 64,
                     .pattern = "kak", .kda_head_dim = 16, .experts = 4, .dense_ffn = 96};
    auto o = synthetic_options(m);
    ASSERT_TRUE(o.has_value()) << o.error().message();
    auto w = synthetic_model(*o);
    ASSERT_TRUE(w.has_value()) << w.error().message();
    const std::vector<std::byte> bytes = w->serialize();
    auto model = model_from_file(std::move(*gguf::parse(bytes, "mla.gguf")));
    ASSERT_TRUE(model.has_value()) << model.error().message();
    auto pool = std::move(*ThreadPool::create({.threads = 1, .pin = false}));
    std::vector<std::vector<double>> by_tp;
    for (const char* tp : {"1", "2"}) {
      Config knobs;
      ASSERT_TRUE(knobs.set("engine.tp", tp).has_value());
      auto session = (*model)->new_session(*pool, 4, knobs);
      ASSERT_TRUE(session.has_value()) << arch << " tp " << tp << ": " << session.error().message();
      OpCapture capture;
      (*session)->set_op_tap(&capture);
      for (TokenId t : {5, 6, 7}) {
        capture.begin_step();
        ASSERT_TRUE((*session)->step(t).has_value());
      }
      for (const char* op : {"layer.0.ffn.gate", "layer.0.ffn.up", "layer.0.ffn.act"}) {
        const OpCapture::Op* found = capture.find(op);
        ASSERT_NE(found, nullptr) << arch << " " << op;
        for (const std::vector<double>& step : found->steps) EXPECT_EQ(step.size(), 96u) << arch << " tp " << tp << " " << op;
      }
      by_tp.push_back(capture.find("layer.0.ffn.act")->steps.back());
    }
    for (size_t i = 0; i < by_tp[0].size(); ++i) EXPECT_NEAR(by_tp[1][i], by_tp[0][i], 1e-5) << arch << " column " << i;
  }
}

}  // namespace
}  // namespace recur::gate
