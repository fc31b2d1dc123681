// The loop on an episode written at test time, on a kernel registered by the test: a slow
// starting variant, a decoy neighbour that is correct but slower, and a fast neighbour. The
// agent must try the decoy, reject it at the microbenchmark, keep the fast one, pass the gate,
// and a resumed run must replay every experiment instead of re-running it. Nothing here is
// known to the agent's code: the kernel, its knob and the episode exist only in this test.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "loop/builtin_proposer.h"
#include "loop/episode.h"
#include "loop/evidence.h"
#include "loop/gate_state.h"
#include "loop/loop.h"
#include "loop/proposer_factory.h"
#include "loop/search_space.h"
#include "kernels/registry.h"
#include "loop/triple_kernel_test_util.h"

namespace recur::agent {
namespace {

namespace fs = std::filesystem;
using kernels::KernelCall;

// y = 3 x, computed in `passes` partial sums of 3x/passes (exact: passes is a power of two).
// Each call then sleeps 250 us per pass: the variants' times are set by the test (1 : 4 : 16),
// not by how many other processes share the CPU. Computed times made the decisions load-
// dependent: at load 5 on 2 cores the bench budget held fewer than the six rounds p < 0.05
// needs, the decoy's bench came back inconclusive and the decoy reached the gate. Sleeping
// also leaves the CPU to the tests ctest runs beside this one.
kernels::KernelFn scaled(int passes) {
  return [passes](const KernelCall& c) {
    const float* x = c.inputs[0].ptr<float>();
    float* y = c.outputs[0].ptr<float>();
    const int64_t n = c.shape["N"];
    const float part = 3.0f / float(passes);
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] * part;
    for (int p = 1; p < passes; ++p)
      for (int64_t i = 0; i < n; ++i) y[i] += x[i] * part;
    std::this_thread::sleep_for(std::chrono::microseconds(250 * passes));
  };
}

void register_toy_kernel() {
  static bool done = [] {
    // Declared order puts the decoy first among the start's neighbours.
    kernels::KernelSpec k = triple_kernel(
        "toy_scale",
        {{.name = "plain", .params = {{"passes", "4"}}, .help = "four partial passes", .run = scaled(4)},
         {.name = "decoy", .params = {{"passes", "16"}}, .help = "sixteen passes: correct, slower", .run = scaled(16)},
         {.name = "fast", .params = {{"passes", "1"}}, .help = "one pass", .run = scaled(1)}});
    Status s = kernels::KernelRegistry::global().add(std::move(k));
    EXPECT_TRUE(s) << s.error().to_string();
    return true;
  }();
  (void)done;
}

class LoopTest : public ::testing::Test {
 protected:
  void SetUp() override {
    register_toy_kernel();
    dir_ = fs::temp_directory_path() / fmt::format("recur-loop-test-{}-{}", ::getpid(),
                                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write("gate.toml", R"toml(name = "toy-speed"
conditions = ["check_pass(cand)", "speedup(cand vs base) >= 2.0"]
[workload.kernel]
name = "toy_scale"
budget_s = 1
seeds = [1]
[arms.base]
"kernel.toy_scale.variant" = "plain"
[arms.cand]
"kernel.toy_scale.variant" = "auto"
)toml");
    write("episode.toml", R"toml(name = "toy"
description = "toy_scale starts at its slow variant; the gate wants 2x"
gate = "gate.toml"
candidate = "cand"
budget_s = 60
[start]
"kernel.toy_scale.variant" = "plain"
)toml");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  LoopOptions options() {
    LoopOptions o;
    o.journal = (dir_ / "runs" / "journal.db").string();
    o.instruction_counts = false;  // valgrind would re-run this test binary, not recur
    return o;
  }

  fs::path dir_;
};

TEST_F(LoopTest, RejectsTheDecoyKeepsTheFastVariantAndPasses) {
  auto ep = load_episode((dir_ / "episode.toml").string());
  ASSERT_TRUE(ep) << ep.error().to_string();
  auto r = run_episode(*ep, options());
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_TRUE(r->passed) << r->outcome;
  EXPECT_EQ(r->final_config.at("kernel.toy_scale.variant"), "fast");
  ASSERT_EQ(r->findings.size(), 1u);
  EXPECT_EQ(r->findings[0].from, "plain");
  EXPECT_EQ(r->findings[0].to, "fast");
  EXPECT_EQ(r->findings[0].component, "kernel:toy_scale");

  // The decoy was tried (it is the first neighbour), passed check, and was reverted by bench.
  bool decoy_checked = false, decoy_reverted_by_bench = false, fast_kept_by_gate = false;
  std::string decoy_bench;  // its Feedback, to show why when it did not revert
  for (const LoggedExperiment& e : r->experiments) {
    auto it = e.spec.config_diff.find("kernel.toy_scale.variant");
    if (it == e.spec.config_diff.end()) continue;
    if (it->second == "decoy" && e.spec.probe == "check.kernel") decoy_checked = e.decision == Decision::kNone;
    if (it->second == "decoy" && e.spec.probe == "bench.kernel") {
      decoy_reverted_by_bench = e.decision == Decision::kRevert;
      decoy_bench = feedback_to_json(e.feedback).dump();
    }
    if (it->second == "decoy") {
      EXPECT_NE(e.spec.probe, "gate") << "the decoy must not reach the gate";
    }
    if (it->second == "fast" && e.spec.probe == "gate") fast_kept_by_gate = e.decision == Decision::kKeep;
  }
  EXPECT_TRUE(decoy_checked);
  EXPECT_TRUE(decoy_reverted_by_bench) << decoy_bench;
  EXPECT_TRUE(fast_kept_by_gate);
  // Step 0 is the gate on the start; it failed.
  ASSERT_FALSE(r->experiments.empty());
  EXPECT_EQ(r->experiments[0].spec.probe, "gate");
  EXPECT_EQ(r->experiments[0].feedback.verdict, Verdict::kRefuted);

  auto j = Journal::open(options().journal, {.create = false});
  ASSERT_TRUE(j);
  EXPECT_TRUE((*j)->check_integrity());
  auto plan = (*j)->resume_plan(r->run.id);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->config.at("kernel.toy_scale.variant"), "fast");  // base + kept diffs
  EXPECT_TRUE(plan->rerun.empty() && plan->pending.empty());
}

TEST_F(LoopTest, ResumeReplaysEveryDoneExperimentWithoutRunningIt) {
  auto ep = load_episode((dir_ / "episode.toml").string());
  ASSERT_TRUE(ep);
  auto first = run_episode(*ep, options());
  ASSERT_TRUE(first) << first.error().to_string();
  auto again = resume_run(first->run.name, options());
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(again->replayed, int(first->experiments.size()));
  EXPECT_EQ(again->experiments.size(), first->experiments.size());
  EXPECT_EQ(again->final_config, first->final_config);
  EXPECT_EQ(again->passed, first->passed);
  for (size_t i = 0; i < first->experiments.size(); ++i)
    EXPECT_EQ(feedback_to_json(again->experiments[i].feedback), feedback_to_json(first->experiments[i].feedback)) << i;
}

TEST_F(LoopTest, AStepLimitPausesTheRunAndResumeFinishesItTheSameWay) {
  auto ep = load_episode((dir_ / "episode.toml").string());
  ASSERT_TRUE(ep);
  LoopOptions o = options();
  o.run_name = "stepped";
  o.max_new_experiments = 2;
  auto first = run_episode(*ep, o);
  ASSERT_TRUE(first) << first.error().to_string();
  EXPECT_TRUE(first->paused);
  EXPECT_FALSE(first->passed);
  EXPECT_EQ(first->experiments.size(), 2u);
  EXPECT_EQ(first->run.state, "running");
  int rounds = 0;
  Result<LoopResult> r = first;
  while (r && r->paused && ++rounds < 20) {  // one new experiment at a time
    o.max_new_experiments = 1;
    r = resume_run("stepped", o);
  }
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_TRUE(r->passed) << r->outcome;
  EXPECT_EQ(r->final_config.at("kernel.toy_scale.variant"), "fast");
  EXPECT_EQ(size_t(rounds) + 2, r->experiments.size());  // each resume ran exactly one new experiment
}

TEST_F(LoopTest, ABudgetStopsTheRunAndNamesWhy) {
  auto ep = load_episode((dir_ / "episode.toml").string());
  ASSERT_TRUE(ep);
  LoopOptions o = options();
  o.budget_s = 0.01;  // the first gate alone spends more
  auto r = run_episode(*ep, o);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_FALSE(r->passed);
  EXPECT_NE(r->outcome.find("budget"), std::string::npos) << r->outcome;
  EXPECT_EQ(r->experiments.size(), 1u);
}

TEST_F(LoopTest, VariantNeighboursDifferInOneParameterAndFixedKnobsStay) {
  Config c;
  ASSERT_TRUE(c.set("kernel.toy_scale.variant", "plain"));
  auto cands = candidates_for("kernel:toy_scale/loop", c, {});
  std::erase_if(cands, [](const Candidate& x) { return x.knob != "kernel.toy_scale.variant"; });  // test.loop.dead too
  ASSERT_EQ(cands.size(), 2u);
  EXPECT_EQ(cands[0].value, "decoy");
  EXPECT_EQ(cands[1].value, "fast");
  EXPECT_NE(cands[0].why.find("passes 4 -> 16"), std::string::npos) << cands[0].why;
  EXPECT_TRUE(candidates_for("kernel:toy_scale", c, {"kernel.toy_scale.variant", "test.loop.dead"}).empty());
  EXPECT_TRUE(candidates_for("kernel:toy", c, {}).empty());  // a prefix of a name is not a part
  EXPECT_TRUE(component_matches("kernel:toy_scale", "kernel:toy_scale/prologue"));
  EXPECT_FALSE(component_matches("kernel:toy_scale/prologue", "kernel:toy_scale"));
}

TEST_F(LoopTest, EpisodeErrorsNameTheFileAndWhatWasExpected) {
  auto expect_error = [&](const std::string& text, const std::string& needle) {
    write("bad.toml", text);
    auto ep = load_episode((dir_ / "bad.toml").string());
    ASSERT_FALSE(ep) << text;
    EXPECT_NE(ep.error().message().find(needle), std::string::npos) << ep.error().message();
    EXPECT_NE(ep.error().message().find("bad.toml"), std::string::npos) << ep.error().message();
  };
  expect_error("name = \"x\"\n", "missing 'gate'");
  expect_error("gate = \"nope.toml\"\n", "cannot open");
  expect_error("gate = \"gate.toml\"\ncandidate = \"zzz\"\n", "candidate 'zzz' is not an arm");
  expect_error("gate = \"gate.toml\"\n[start]\n\"kernel.toy_scale.variant\" = \"warp\"\n", "[start] kernel.toy_scale.variant");
  expect_error("gate = \"gate.toml\"\n[search]\nfixed = [\"no.such.knob\"]\n", "unknown knob 'no.such.knob'");
  expect_error("gate = \"gate.toml\"\nbudget_s = -1\n", "budget_s");
  expect_error("gate = \"gate.toml\"\ncolour = 1\n", "colour");
  expect_error("gate = [\n", "bad.toml:");
}

RECUR_KNOB(loop_test_dead, {.name = "test.loop.dead", .type = KnobType::kBool, .default_value = "false",
                            .components = {"kernel:toy_scale"}, .help = "tagged with the kernel, read by nothing"});

// A change the workload never reads: the gate's record says which knobs it read (not this one),
// the built-in proposer never offers it, and when another proposer does, the paired A/B of the
// current configuration against it finds no measurable effect and it is reverted, not kept.
TEST_F(LoopTest, ADeadKnobIsNotLiveAndANoOpChangeIsRevertedAsNoMeasurableEffect) {
  auto ep = load_episode((dir_ / "episode.toml").string());
  ASSERT_TRUE(ep);
  const std::string flag = (dir_ / "asked").string();
  auto proposer = make_proposer(fmt::format(
      "cmd:if [ -f '{0}' ]; then echo '{{\"stop\": true}}'; else touch '{0}'; "
      "echo '{{\"knob\": \"test.loop.dead\", \"value\": \"true\", \"hypothesis\": \"h\"}}'; fi",
      flag));
  ASSERT_TRUE(proposer) << proposer.error().message();
  LoopOptions o = options();
  o.proposer = proposer->get();
  auto r = run_episode(*ep, o);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_FALSE(r->passed);
  EXPECT_TRUE(r->findings.empty());
  EXPECT_EQ(r->final_config.count("test.loop.dead"), 0u);
  ASSERT_FALSE(r->experiments.empty());
  const GateState start = gate_state_from_feedback(ep->gate, r->experiments[0].feedback);
  ASSERT_TRUE(start.live_knobs.has_value());
  EXPECT_TRUE(start.live_knobs->count("kernel.toy_scale.variant"));
  EXPECT_FALSE(start.live_knobs->count("test.loop.dead"));
  bool ab_reverted = false;
  for (const LoggedExperiment& e : r->experiments) {
    if (!e.spec.config_diff.count("test.loop.dead")) continue;
    EXPECT_NE(e.spec.probe, "gate") << "a change with no measured gain never reaches the gate";
    if (e.spec.probe == "bench.ab") {
      ab_reverted = e.decision == Decision::kRevert;
      ASSERT_FALSE(e.feedback.notes.empty());
      EXPECT_TRUE(e.feedback.notes[0].starts_with("no measurable effect") || e.feedback.notes[0].starts_with("slower"))
          << e.feedback.notes[0];
    }
  }
  EXPECT_TRUE(ab_reverted);

  // The built-in proposer, from the same state, offers no change to the dead knob.
  AgentState as{.episode = &*ep, .config = ep->start, .gate = start};
  as.evidence.components = {{.component = "kernel:toy_scale", .share = 1, .evidence = ""}};
  auto open = open_changes(as);
  ASSERT_TRUE(open);
  ASSERT_FALSE(open->empty());
  for (const Candidate& c : *open) EXPECT_NE(c.knob, "test.loop.dead");
}

TEST(RegionParts, ABrokenMappingIsAFindingNotARanking) {
  kernels::KernelSpec k;
  k.name = "toy_regions";
  k.regions = {{.name = "main", .function_substring = "main"},
               {.name = "tail", .function_substring = "tail"},
               {.name = "copy", .function_substring = "copy", .harness = true}};
  auto split = [](std::vector<std::pair<std::string, double>> shares) {
    Feedback f;
    for (auto& [c, v] : shares) f.attribution.push_back({c, v, ""});
    return f;
  };
  std::vector<Attribution> parts;
  std::vector<std::string> findings;
  add_region_parts(k, split({{"kernel:toy_regions/main", 0.45}, {"kernel:toy_regions/tail", 0.15},
                             {"kernel:toy_regions/copy", 0.3}, {"unattributed", 0.1}}),
                   parts, findings);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].component, "kernel:toy_regions/main");
  EXPECT_NEAR(parts[0].share, 0.75, 1e-9);  // of the kernel's own regions
  // The main region matched nothing (inlined): 17% of the kernel's own work is no ranking.
  parts.clear();
  findings.clear();
  add_region_parts(k, split({{"kernel:toy_regions/tail", 0.1}, {"kernel:toy_regions/copy", 0.4}, {"unattributed", 0.5}}),
                   parts, findings);
  EXPECT_TRUE(parts.empty());
  ASSERT_EQ(findings.size(), 1u);
  EXPECT_NE(findings[0].find("broken region mapping of toy_regions"), std::string::npos) << findings[0];
  EXPECT_NE(findings[0].find("main matched none"), std::string::npos) << findings[0];
  // Every region matched but they cover a third of the kernel's own instructions: broken too.
  findings.clear();
  add_region_parts(k, split({{"kernel:toy_regions/main", 0.1}, {"kernel:toy_regions/tail", 0.1}, {"unattributed", 0.8}}),
                   parts, findings);
  EXPECT_TRUE(parts.empty());
  EXPECT_NE(findings.at(0).find("cover 20%"), std::string::npos) << findings[0];
}

TEST(GateScoreTest, FewerFailingConditionsWinThenLessViolation) {
  GateScore a{.failing = 1, .inconclusive = 0, .violation = 0.5};
  GateScore b{.failing = 2, .inconclusive = 0, .violation = 0.01};
  EXPECT_TRUE(closer_to_pass(a, b));
  EXPECT_FALSE(closer_to_pass(b, a));
  GateScore c{.failing = 1, .inconclusive = 0, .violation = 0.3};
  EXPECT_TRUE(closer_to_pass(c, a));
  GateScore d{.failing = 1, .inconclusive = 0, .violation = 0.48};  // within the 10% noise margin
  EXPECT_FALSE(closer_to_pass(d, a));
  EXPECT_FALSE(closer_to_pass(a, a));
}

}  // namespace
}  // namespace recur::agent
