// The component -> knob map is complete: every component the engine's zones (time split) and
// op taps (op-by-op errors) can name has a knob that acts on it or is declared knobless, and a
// per-layer component binds a per-layer knob to its layer. Runs a small hybrid model (MoE, TP).
#include "loop/component_knobs.h"

#include <algorithm>
#include <set>

#include <gtest/gtest.h>

#include "loop/search_space.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "engine/synthetic.h"
#include "engine/test_models.h"
#include "gate/op_errors.h"
#include "gate/time_split.h"

namespace recur::agent {
namespace {

std::unique_ptr<Model> hybrid_model(ModelConfig c, std::vector<std::byte>& bytes) {
  auto w = synthetic_model({c, gguf::TensorType::kF32, 5});
  EXPECT_TRUE(w.has_value());
  bytes = w->serialize();
  auto m = model_from_file(std::move(*gguf::parse(bytes, "components.gguf")));
  EXPECT_TRUE(m.has_value()) << m.error().message();
  return std::move(*m);
}

gate::NamedConfig arm(std::string name, std::vector<std::pair<const char*, const char*>> knobs) {
  gate::NamedConfig a{std::move(name), Config()};
  for (auto [k, v] : knobs) EXPECT_TRUE(a.config.set(k, v).has_value()) << k;
  return a;
}

TEST(ComponentKnobs, EveryComponentTheEngineNamesMapsToKnobsOrIsDeclaredKnobless) {
  std::vector<std::byte> bytes;
  auto model = hybrid_model(recur::testing::tiny_hybrid_config(4), bytes);
  auto pool = std::move(*ThreadPool::create({.threads = 1, .pin = false}));
  std::set<std::string> components;
  for (const std::string& c : gate::engine_zone_components()) components.insert(c);

  gate::EngineWorkload w;
  w.prefill_tokens = 8;
  w.decode_tokens = 4;
  w.runs = 3;
  for (auto phase : {gate::SplitPhase::kDecode, gate::SplitPhase::kPrefill}) {
    auto split = gate::measure_time_split(*model, *pool, w, phase, arm("a", {}), nullptr, "");
    ASSERT_TRUE(split.has_value()) << split.error().message();
    double sum = 0;
    for (const Attribution& a : split->feedback.attribution) {
      sum += a.share;
      if (a.component == "unattributed") EXPECT_EQ(a.share, 0) << "an engine zone no rule knows";
      else components.insert(a.component);
    }
    EXPECT_NEAR(sum, 1.0, 1e-9);
    EXPECT_TRUE(split->feedback.attribution_is_decomposition);
    // The model's one attention layer (pattern kkka) is named: layer 3's attention, not "attention".
    const auto attention = std::find_if(split->feedback.attribution.begin(), split->feedback.attribution.end(),
                                        [](const Attribution& a) { return a.component.starts_with("engine:attention"); });
    ASSERT_NE(attention, split->feedback.attribution.end());
    EXPECT_EQ(attention->component, "engine:attention/layer[3]");
    EXPECT_NE(attention->evidence.find("by layer: 3 100%"), std::string::npos) << attention->evidence;
  }
  gate::OpErrorOptions o;
  o.decode_tokens = 3;
  auto ops = gate::measure_op_errors(*model, "components.gguf", *pool, o, arm("tp", {{"engine.tp", "2"}}), arm("ref", {}));
  ASSERT_TRUE(ops.has_value()) << ops.error().message();
  for (const gate::OpError& e : ops->ops) components.insert(e.component);
  EXPECT_TRUE(components.count("op:all_reduce"));
  EXPECT_TRUE(components.count("engine:router"));

  for (const std::string& c : components) {
    const bool knobs = !knobs_for_component(c).empty();
    EXPECT_TRUE(knobs || declared_without_knobs(c)) << c << ": no knob acts on it and it is not declared knobless";
    EXPECT_FALSE(knobs && declared_without_knobs(c)) << c << ": declared knobless but knobs are tagged with it";
  }
}

TEST(ComponentKnobs, APerLayerComponentBindsPerLayerKnobsToItsLayer) {
  auto keys = [](const std::vector<Candidate>& cs) {
    std::set<std::string> out;
    for (const Candidate& c : cs) out.insert(c.key());
    return out;
  };
  const Config current;
  const auto bound = keys(candidates_for("engine:attention/layer[3]", current, {}));
  EXPECT_TRUE(bound.count("engine.kv_dtype.layer[3]=bf16"));
  EXPECT_TRUE(bound.count("engine.kv_dtype.layer[3]=fp8_e4m3"));
  EXPECT_FALSE(bound.count("engine.kv_dtype.layer[2]=bf16"));
  for (const std::string& k : keys(candidates_for("engine:attention", current, {})))
    EXPECT_EQ(k.find("kv_dtype"), std::string::npos) << "no layer named, no per-layer knob: " << k;
  const std::set<std::string, std::less<>> fixed = {"engine.kv_dtype.layer[3]"};
  for (const std::string& k : keys(candidates_for("engine:attention/layer[3]", current, fixed)))
    EXPECT_EQ(k.find("kv_dtype"), std::string::npos) << "fixed: " << k;
  EXPECT_EQ(component_layer("engine:attention/layer[12]"), 12);
  EXPECT_FALSE(component_layer("engine:attention").has_value());
  EXPECT_FALSE(component_layer("engine:attention/layer[x]").has_value());
}

TEST(ComponentKnobs, TheTimeSplitBetweenArmsNamesWhatGotSlower) {
  std::vector<std::byte> bytes;
  ModelConfig c = recur::testing::tiny_hybrid_config(0);
  c.dim = 256;
  c.ffn_dim = 768;
  c.head_dim = 64;
  c.kda_head_dim = 64;
  auto model = hybrid_model(c, bytes);
  auto pool = std::move(*ThreadPool::create({.threads = 1, .pin = false}));
  gate::EngineWorkload w;
  w.prefill_tokens = 4;
  w.decode_tokens = 8;
  w.runs = 3;
  const gate::NamedConfig fast = arm("fast", {});
  auto split = gate::measure_time_split(*model, *pool, w, gate::SplitPhase::kDecode,
                                        arm("slow", {{"kernel.gemm.precision", "bf16x6"}}), &fast, "");
  ASSERT_TRUE(split.has_value()) << split.error().message();
  ASSERT_FALSE(split->feedback.attribution.empty());
  EXPECT_TRUE(component_matches("kernel:gemm", split->feedback.attribution.front().component))
      << split->feedback.attribution.front().component;
  EXPECT_GT(split->feedback.attribution.front().share, 0.5);
  EXPECT_GT(split->a.us_by_component.at("kernel:gemm"), split->b.us_by_component.at("kernel:gemm"));
}

TEST(ComponentKnobs, KnoblessComponentsAreTheFinding) {
  Evidence ev;
  ev.components = {{.component = "engine:norm", .share = 0.6, .evidence = ""},
                   {.component = "kernel:gemm", .share = 0.4, .evidence = ""}};
  EXPECT_EQ(knobless_components(ev), std::vector<std::string>{"engine:norm (60%)"});
  // The top component is knobless: a patch-capable proposer is asked for a code change there.
  ev.condition = "decode_ratio(cand vs base) >= 2";
  const std::string request = patch_request(ev);
  EXPECT_NE(request.find("engine:norm (60%"), std::string::npos) << request;
  EXPECT_NE(request.find("propose a patch"), std::string::npos) << request;
  std::swap(ev.components[0], ev.components[1]);  // a knob acts on the largest: no request
  EXPECT_EQ(patch_request(ev), "");
}

}  // namespace
}  // namespace recur::agent

namespace recur::agent {
namespace {

// A choice that exists for tests (the AMX tile emulator: the same bits, far slower), or that the
// machine cannot run, is never a tuning step: neither the component's candidates nor the random
// proposer's changes offer it.
TEST(ComponentKnobs, TestOnlyAndUnavailableChoicesAreNeverProposed) {
  const KnobSpec* amx = KnobRegistry::global().find("kernel.gemm.amx");
  ASSERT_NE(amx, nullptr);
  ASSERT_NE(std::ranges::find(amx->test_only, "emulate"), amx->test_only.end());
  bool offers_on = false;
  for (const Candidate& c : changes_of(*amx, amx->name, "off")) {
    EXPECT_NE(c.value, "emulate");
    offers_on |= c.value == "on";
  }
  // `on` is offered exactly where the CPU has AMX (a choice the machine cannot run is not a step).
  const CpuFeatures& f = cpu_features();
  EXPECT_EQ(offers_on, f.amx_tile && f.amx_int8 && f.amx_bf16);
  ASSERT_NE(amx->available, nullptr);
  EXPECT_TRUE(amx->available("off"));
  Config current;
  for (const Candidate& c : candidates_for("kernel:gemm", current, {})) EXPECT_NE(c.key(), "kernel.gemm.amx=emulate");
}

}  // namespace
}  // namespace recur::agent
