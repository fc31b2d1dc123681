// The knob-efficacy test (gate/knob_efficacy.h): every knob of the stack acts where it says, and
// the check fails for a dead knob that claims the engine and for a load-time knob declared as
// run-time.
#include "gate/knob_efficacy.h"

#include <functional>
#include <set>
#include <string>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gate/cache_dir_fixture.h"

#include "core/cpu_features.h"
#include "serve/role_protocol.h"
#include "transfer/transfer_engine.h"

namespace recur::gate {
namespace {

class KnobEfficacy : public CacheDirSuite {};

// The declared signals outside the engine: the typed value the code there reads.
KnobEfficacyOptions stack_readers() {
  KnobEfficacyOptions o;
  // serve/role_prefill.cc and python/recur/prefill_bench.py read the mode through this.
  o.readers["serve.kv_transfer"] = [](const Config& c) { return serve::role_kv_transfer_mode(c); };
  // The transfer engine's emulated link (serve's roles and the Python bindings pass it on).
  o.readers["transfer.link_mbps"] = [](const Config& c) -> Result<std::string> {
    RECUR_ASSIGN_OR_RETURN(double bps, transfer::link_bytes_per_s(c));
    return fmt::format("{} B/s", bps);
  };
  // python/src/module.cc applies the knob as this bool (set_release_gil).
  o.readers["python.release_gil"] = [](const Config& c) -> Result<std::string> {
    RECUR_ASSIGN_OR_RETURN(bool on, c.get_bool("python.release_gil"));
    return on ? "release" : "hold";
  };
  // cli/main.cc caps the dispatch level at start-up (set_isa_cap), "auto" caps nothing.
  o.readers["core.isa"] = [](const Config& c) -> Result<std::string> {
    RECUR_ASSIGN_OR_RETURN(std::string v, c.get("core.isa"));
    if (v == "auto") return std::string("no cap");
    return fmt::format("cap {}", isa_name(*parse_isa(v)));
  };
  return o;
}

std::string describe(const std::vector<KnobEfficacyFailure>& failures) {
  std::string s;
  for (const KnobEfficacyFailure& f : failures) s += fmt::format("  {}={}: {}\n", f.knob, f.value, f.why);
  return s;
}

// A copy of the global registry (the engine reads its knobs by name), optionally with a change.
KnobRegistry registry_copy(const std::function<void(KnobSpec&)>& edit = {}) {
  KnobRegistry r;
  for (const KnobSpec* k : KnobRegistry::global().all()) {
    KnobSpec copy = *k;
    if (edit) edit(copy);
    EXPECT_TRUE(r.add(std::move(copy)).has_value());
  }
  return r;
}

TEST_F(KnobEfficacy, EveryRegisteredKnobActsWhereItIsDeclaredToAct) {
  auto failures = check_knob_efficacy(KnobRegistry::global(), stack_readers());
  ASSERT_TRUE(failures.has_value()) << failures.error().message();
  EXPECT_TRUE(failures->empty()) << "knobs whose declaration does not hold:\n" << describe(*failures);
}

TEST_F(KnobEfficacy, ADeadKnobThatClaimsTheEngineFails) {
  KnobRegistry r = registry_copy();
  ASSERT_TRUE(r.add({.name = "test.efficacy.dead", .type = KnobType::kEnum, .choices = {"a", "b"},
                     .default_value = "a", .acts = KnobActs::kEngine, .help = "read by nothing"})
                  .has_value());
  KnobEfficacyOptions o = stack_readers();
  o.only = {"test.efficacy.dead"};
  auto failures = check_knob_efficacy(r, o);
  ASSERT_TRUE(failures.has_value()) << failures.error().message();
  ASSERT_EQ(failures->size(), 1u) << describe(*failures);
  EXPECT_EQ(failures->at(0).knob, "test.efficacy.dead");
  EXPECT_EQ(failures->at(0).value, "b");
  EXPECT_NE(failures->at(0).why.find("no run differs"), std::string::npos) << failures->at(0).why;
}

TEST_F(KnobEfficacy, ALoadTimeKnobDeclaredAsRunTimeFails) {
  // Declared as acting at run time only, engine.weight_layout is applied to a shared instance
  // (as a gate would share it) and changes nothing there.
  KnobRegistry r = registry_copy([](KnobSpec& k) {
    if (k.name == "engine.weight_layout") k.acts = KnobActs::kEngine;
  });
  KnobEfficacyOptions o = stack_readers();
  o.only = {"engine.weight_layout"};
  auto failures = check_knob_efficacy(r, o);
  ASSERT_TRUE(failures.has_value()) << failures.error().message();
  ASSERT_EQ(failures->size(), 1u) << describe(*failures);
  EXPECT_EQ(failures->at(0).value, "rows");
}

// The kernels the forward calls (engine/engine_kernels.h): their variant knobs claim the engine,
// and every value holds there (a different variant changes the run; the one "auto" picks is
// named in the trace). MLA's run on the synthetic deepseek2 and kimi-linear models.
TEST_F(KnobEfficacy, TheVariantKnobsOfTheKernelsTheEngineCallsActOnTheEngine) {
  KnobEfficacyOptions o = stack_readers();
  for (const char* kernel : {"rmsnorm", "rmsnorm_residual", "swiglu", "rope", "route_topk", "embedding_f32",
                             "embedding_f16", "embedding_bf16", "embedding_q8_0", "sample", "gemv", "gemm",
                             "gemm_w8a8", "kda_decode", "kda_replay_decode", "kda_prefill", "attention_decode",
                             "attention_prefill", "mla_decode", "mla_prefill"}) {
    const std::string knob = fmt::format("kernel.{}.variant", kernel);
    const KnobSpec* k = KnobRegistry::global().find(knob);
    ASSERT_NE(k, nullptr) << knob;
    EXPECT_TRUE(acts_in(k->acts, KnobActs::kEngine)) << knob;
    EXPECT_TRUE(acts_in(k->acts, KnobActs::kKernelProbe)) << knob;
    o.only.insert(knob);
  }
  auto failures = check_knob_efficacy(KnobRegistry::global(), o);
  ASSERT_TRUE(failures.has_value()) << failures.error().message();
  EXPECT_TRUE(failures->empty()) << describe(*failures);
}

// The MLA kernels run on the check's synthetic deepseek2 and kimi-linear models: declared
// probe-only (as they were before those models were in the check), their knobs fail, read by
// the engine where nothing said it would. (A dead engine knob makes the check run every model
// under the defaults.)
TEST_F(KnobEfficacy, MlaVariantKnobsDeclaredProbeOnlyFailAsReadByTheEngine) {
  const std::set<std::string> mla = {"kernel.mla_decode.variant", "kernel.mla_prefill.variant"};
  KnobRegistry r = registry_copy([&](KnobSpec& k) {
    if (mla.contains(k.name)) k.acts = KnobActs::kKernelProbe;
  });
  ASSERT_TRUE(r.add({.name = "test.efficacy.dead", .type = KnobType::kBool, .default_value = "false",
                     .acts = KnobActs::kEngine, .help = "read by nothing"})
                  .has_value());
  KnobEfficacyOptions o = stack_readers();
  o.only = mla;
  o.only.insert("test.efficacy.dead");
  auto failures = check_knob_efficacy(r, o);
  ASSERT_TRUE(failures.has_value()) << failures.error().message();
  ASSERT_EQ(failures->size(), 3u) << describe(*failures);
  std::set<std::string> read;
  for (const KnobEfficacyFailure& f : *failures)
    if (f.why.find("the engine reads") != std::string::npos) read.insert(f.knob);
  EXPECT_EQ(read, mla) << describe(*failures);
}

// The gemm's algorithm and tiles reach the engine's packed products: each value changes the run
// (the tiled zone's kc and mc, the algorithm's bits) or is refused naming the knob (a
// contradiction with kernel.gemm.variant, or no AVX-512).
TEST_F(KnobEfficacy, TheGemmAlgorithmAndTileKnobsActOnTheEngine) {
  KnobEfficacyOptions o = stack_readers();
  for (const char* knob : {"kernel.gemm.algo", "kernel.gemm.kc", "kernel.gemm.mc"}) {
    const KnobSpec* k = KnobRegistry::global().find(knob);
    ASSERT_NE(k, nullptr) << knob;
    EXPECT_TRUE(acts_in(k->acts, KnobActs::kEngine)) << knob;
    o.only.insert(knob);
  }
  auto failures = check_knob_efficacy(KnobRegistry::global(), o);
  ASSERT_TRUE(failures.has_value()) << failures.error().message();
  EXPECT_TRUE(failures->empty()) << describe(*failures);
}

// grouped_gemm stays probe-only (the engine's experts run their own projections): claiming the
// engine fails, and its knob's help says why.
TEST_F(KnobEfficacy, GroupedGemmIsProbeOnlyWithItsReason) {
  const KnobSpec* k = KnobRegistry::global().find("kernel.grouped_gemm.variant");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->acts, KnobActs::kKernelProbe);
  EXPECT_NE(k->help.find("probe-only:"), std::string::npos) << k->help;
  KnobRegistry r = registry_copy([](KnobSpec& spec) {
    if (spec.name == "kernel.grouped_gemm.variant") spec.acts = KnobActs::kEngine | KnobActs::kKernelProbe;
  });
  KnobEfficacyOptions o = stack_readers();
  o.only = {"kernel.grouped_gemm.variant"};
  auto failures = check_knob_efficacy(r, o);
  ASSERT_TRUE(failures.has_value()) << failures.error().message();
  EXPECT_EQ(failures->size(), r.find("kernel.grouped_gemm.variant")->choices.size() - 1) << describe(*failures);
}

// softmax is registered but the forward does not call it (attention's softmax is inside the paged
// kernels, routing's inside route_topk): claiming the engine fails for every value, the one
// "auto" resolves to included (no trace zone names it).
TEST_F(KnobEfficacy, AKernelVariantKnobThatClaimsTheEngineWithoutACallFails) {
  KnobRegistry r = registry_copy([](KnobSpec& k) {
    if (k.name == "kernel.softmax.variant") k.acts = KnobActs::kEngine | KnobActs::kKernelProbe;
  });
  KnobEfficacyOptions o = stack_readers();
  o.only = {"kernel.softmax.variant"};
  auto failures = check_knob_efficacy(r, o);
  ASSERT_TRUE(failures.has_value()) << failures.error().message();
  const KnobSpec* k = r.find("kernel.softmax.variant");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(failures->size(), k->choices.size() - 1) << describe(*failures);  // all but the default
}

TEST_F(KnobEfficacy, UndeclaredKnobsAndKnobsWithoutASignalFail) {
  KnobRegistry r = registry_copy();
  ASSERT_TRUE(r.add({.name = "test.efficacy.undeclared", .type = KnobType::kBool, .default_value = "false"}).has_value());
  ASSERT_TRUE(r.add({.name = "test.efficacy.served", .type = KnobType::kBool, .default_value = "false",
                     .acts = KnobActs::kServe})
                  .has_value());
  ASSERT_TRUE(r.add({.name = "test.efficacy.probe", .type = KnobType::kBool, .default_value = "false",
                     .acts = KnobActs::kKernelProbe})
                  .has_value());
  KnobEfficacyOptions o = stack_readers();
  o.only = {"test.efficacy.undeclared", "test.efficacy.served", "test.efficacy.probe"};
  auto failures = check_knob_efficacy(r, o);
  ASSERT_TRUE(failures.has_value()) << failures.error().message();
  EXPECT_EQ(failures->size(), 3u) << describe(*failures);
}

}  // namespace
}  // namespace recur::gate
