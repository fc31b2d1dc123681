// Changes that only help together (docs/agent.md, "Lookahead from a locally confirmed change"),
// on a gate written at test time: a kernel registered here (`toy_pair`: a rough variant with
// 1e-3 relative error, an exact one) judged against float64, and a program that reports a
// throughput from the arm's knobs: exact alone drops it 1000x, the partner knob alone 3x, both
// together restore it; a decoy knob does nothing. Each fix alone is further from passing than
// the start, so a loop that keeps only strictly closer single changes reverts both. The exact
// variant is confirmed on its own component (the kernel check: 2x more accurate), so the loop
// looks one step further from it and keeps the pair; when the partner is fixed, nothing is kept.
#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>
#include <unistd.h>

#include "loop/episode.h"
#include "loop/loop.h"
#include "kernels/registry.h"
#include "loop/triple_kernel_test_util.h"

namespace recur::agent {
namespace {

namespace fs = std::filesystem;
using kernels::KernelCall;

RECUR_KNOB(lookahead_test_partner, {.name = "test.pair.partner", .type = KnobType::kBool, .default_value = "false",
                                    .components = {"kernel:toy_pair"}, .help = "helps only with the exact variant"});
RECUR_KNOB(lookahead_test_decoy, {.name = "test.pair.decoy", .type = KnobType::kBool, .default_value = "false",
                                  .components = {"kernel:toy_pair"}, .help = "read by nothing that is measured"});

// y = 3x, times (1 + `bias`): the rough variant's relative error is its bias.
kernels::KernelFn biased(double bias) {
  return [bias](const KernelCall& c) {
    const float* x = c.inputs[0].ptr<float>();
    float* y = c.outputs[0].ptr<float>();
    for (int64_t i = 0; i < c.shape["N"]; ++i) y[i] = float(3.0 * double(x[i]) * (1.0 + bias));
  };
}

void register_pair_kernel() {
  static bool done = [] {
    kernels::KernelSpec k = triple_kernel(
        "toy_pair", {{.name = "rough", .params = {{"digits", "3"}}, .help = "1e-3 relative error", .run = biased(1e-3)},
                     {.name = "exact", .params = {{"digits", "7"}}, .help = "exact in float", .run = biased(0)}});
    Status s = kernels::KernelRegistry::global().add(std::move(k));
    EXPECT_TRUE(s) << s.error().to_string();
    return true;
  }();
  (void)done;
}

class LookaheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    register_pair_kernel();
    dir_ = fs::temp_directory_path() / fmt::format("recur-lookahead-test-{}-{}", ::getpid(),
                                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // Throughput from the knobs: the start and the pair at 100, exact alone 0.1, the partner alone 30.
    write("speed.sh", R"sh(v=rough; p=false
for kv in $RECUR_KNOBS; do
  case "$kv" in kernel.toy_pair.variant=*) v=${kv#*=};; test.pair.partner=*) p=${kv#*=};; esac
done
case "$v/$p" in rough/false|exact/true) r=100;; exact/false) r=0.1;; *) r=30;; esac
echo "{\"decode_tok_s\": $r}"
)sh");
    write("gate.toml", R"toml(name = "toy-pair"
conditions = ["max_rel_err(cand) <= 1e-5", "decode_ratio(cand vs base) >= 0.9", "decode_tok_s(cand) >= 50"]
[workload.kernel]
name = "toy_pair"
budget_s = 1
seeds = [1]
[workload.program]
command = ["/bin/sh", "{spec_dir}/speed.sh"]
runs = 3
[arms.base]
"kernel.toy_pair.variant" = "rough"
[arms.cand]
"kernel.toy_pair.variant" = "rough"
)toml");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ / name) << text; }
  Result<Episode> episode(const std::string& fixed) {
    write("episode.toml", fmt::format(R"toml(name = "toy-pair"
description = "the rough variant misses the error bound; the exact one alone loses the throughput"
gate = "gate.toml"
budget_s = 60
max_experiments = 40
[start]
"kernel.toy_pair.variant" = "rough"
[search]
fixed = [{}]
)toml",
                                      fixed));
    return load_episode((dir_ / "episode.toml").string());
  }
  LoopOptions options() {
    LoopOptions o;
    o.journal = (dir_ / "runs" / "journal.db").string();
    o.instruction_counts = false;
    return o;
  }

  fs::path dir_;
};

const LoggedExperiment* find(const LoopResult& r, std::string_view probe, const std::string& knob,
                             const std::string& value) {
  for (const LoggedExperiment& e : r.experiments) {
    auto it = e.spec.config_diff.find(knob);
    if (e.spec.probe == probe && it != e.spec.config_diff.end() && it->second == value) return &e;
  }
  return nullptr;
}

TEST_F(LookaheadTest, FindsThePairThatOnlyHelpsTogetherAndAblationKeepsBoth) {
  auto ep = episode("");
  ASSERT_TRUE(ep) << ep.error().to_string();
  auto r = run_episode(*ep, options());
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_TRUE(r->passed) << r->outcome;
  EXPECT_EQ(r->final_config.at("kernel.toy_pair.variant"), "exact");
  EXPECT_EQ(r->final_config.at("test.pair.partner"), "true");
  EXPECT_EQ(r->final_config.count("test.pair.decoy"), 0u);
  ASSERT_EQ(r->findings.size(), 2u) << r->outcome;  // the ablation dropped neither
  EXPECT_EQ(r->findings[0].knob, "kernel.toy_pair.variant");
  EXPECT_EQ(r->findings[1].knob, "test.pair.partner");
  EXPECT_NE(r->findings[0].gain.find("check: max_rel"), std::string::npos) << r->findings[0].gain;

  // Exact alone: confirmed by the check, reverted by the gate, and the license is journaled.
  const LoggedExperiment* alone = nullptr;
  for (const LoggedExperiment& e : r->experiments)
    if (e.spec.probe == "gate" && e.spec.config_diff == KnobDiff{{"kernel.toy_pair.variant", "exact"}}) alone = &e;
  ASSERT_NE(alone, nullptr);
  EXPECT_EQ(alone->decision, Decision::kRevert);
  const LoggedExperiment* license = find(*r, "analyze.lookahead", "kernel.toy_pair.variant", "exact");
  ASSERT_NE(license, nullptr);
  EXPECT_NE(license->spec.hypothesis.find("check: max_rel"), std::string::npos) << license->spec.hypothesis;
  // The decoy, proposed first from there, had no measurable effect; the pair's gate kept both.
  const LoggedExperiment* decoy = find(*r, "bench.ab", "test.pair.decoy", "true");
  ASSERT_NE(decoy, nullptr);
  EXPECT_EQ(decoy->decision, Decision::kRevert);
  const LoggedExperiment* pair = find(*r, "gate", "test.pair.partner", "true");
  ASSERT_NE(pair, nullptr);
  EXPECT_EQ(pair->decision, Decision::kKeep);
  EXPECT_EQ(pair->spec.config_diff.at("kernel.toy_pair.variant"), "exact");
  EXPECT_TRUE(pair->spec.hypothesis.starts_with("pair: ")) << pair->spec.hypothesis;
  // The ablation put each back and the gate failed each time.
  int ablations = 0;
  for (const LoggedExperiment& e : r->experiments) {
    if (!e.spec.hypothesis.starts_with("ablation:")) continue;
    ++ablations;
    EXPECT_EQ(e.decision, Decision::kRevert) << e.spec.hypothesis;
  }
  EXPECT_EQ(ablations, 2);

  // The journal's kept diffs are the configuration, and a resume replays the same run.
  auto again = resume_run(r->run.name, options());
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(again->replayed, int(r->experiments.size()));
  EXPECT_EQ(again->final_config, r->final_config);
  EXPECT_EQ(again->findings.size(), 2u);
}

TEST_F(LookaheadTest, AConfirmedChangeWithoutAPartnerIsRevertedInTheEnd) {
  auto ep = episode("\"test.pair.partner\"");
  ASSERT_TRUE(ep) << ep.error().to_string();
  auto r = run_episode(*ep, options());
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_FALSE(r->passed) << r->outcome;
  EXPECT_TRUE(r->findings.empty());
  EXPECT_EQ(r->final_config, ep->start);
  EXPECT_NE(find(*r, "analyze.lookahead", "kernel.toy_pair.variant", "exact"), nullptr);  // it looked
  for (const LoggedExperiment& e : r->experiments)
    EXPECT_NE(e.decision, Decision::kKeep) << e.step << " " << e.spec.probe << " " << e.spec.hypothesis;
  EXPECT_NE(r->outcome.find("no untried change left"), std::string::npos) << r->outcome;
}

}  // namespace
}  // namespace recur::agent
