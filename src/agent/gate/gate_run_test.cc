// Real gates end to end: a tiny synthetic llama at TP=1 and TP=2 (agreement and throughput),
// and a kernel (check and bench). No timed assertions: throughput and time conditions are loose
// enough to hold on any machine; what is checked is the plumbing, the verdicts and the records.
#include "gate/gate.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gate/program_probe.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "gate/cache_dir_fixture.h"

#include <fmt/format.h>

#include "engine/architectures.h"

namespace recur::gate {
namespace {

class GateRun : public CacheDirSuite {};

constexpr std::string_view kEngineGate = R"toml(name = "tp-agreement-tiny"
conditions = [
  "tokens_equal(tp2 vs tp1)",
  "logits_max_rel_err(tp2 vs tp1) <= 1e-4",
  "decode_tok_s(tp2) > 0 and prefill_tok_s(tp1) > 0",
]
[workload]
threads = 1
[workload.engine]
model = "synthetic"
prompts = ["hello world", "the cat"]
prefill_tokens = 8
decode_tokens = 6
runs = 3
warmup_runs = 1
[workload.engine.synthetic]
arch = "llama"
dim = 64
layers = 2
heads = 4
kv_heads = 2
ffn = 128
vocab = 400
context = 128
[arms.tp1]
"engine.tp" = "1"
[arms.tp2]
"engine.tp" = "2"
)toml";

TEST_F(GateRun, TensorParallelAgreementOnATinySyntheticModelPasses) {
  auto spec = parse_gate_spec(kEngineGate, "");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  std::vector<std::string> progress;
  GateRunOptions o;
  o.progress = [&](std::string_view s) { progress.emplace_back(s); };
  auto r = run_gate(*spec, o);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->verdict.outcome, Outcome::kPass) << r->verdict.reason;
  EXPECT_EQ(r->feedback.verdict, Verdict::kConfirmed);
  EXPECT_EQ(r->feedback.probe, "gate");
  EXPECT_EQ(r->feedback.tier, 3);
  EXPECT_TRUE(validate_feedback(r->feedback).has_value());
  ASSERT_EQ(r->values.count("tokens_equal(tp2 vs tp1)"), 1u);
  EXPECT_EQ(r->values.at("tokens_equal(tp2 vs tp1)").value.value, 1);
  const double rel = r->values.at("logits_max_rel_err(tp2 vs tp1)").value.value;
  EXPECT_GE(rel, 0);
  EXPECT_LE(rel, 1e-4);
  for (const char* k : {"decode_tok_s(tp2)", "prefill_tok_s(tp1)"}) {
    ASSERT_EQ(r->values.count(k), 1u) << k;
    const Interval& v = r->values.at(k).value;
    EXPECT_GT(v.lo, 0) << k;
    EXPECT_LE(v.lo, v.value) << k;
    EXPECT_LE(v.value, v.hi) << k;
  }
  // One agreement pass, then one throughput record per arm.
  ASSERT_EQ(r->probes.size(), 3u);
  EXPECT_EQ(r->probes[0].probe, "check.engine");
  EXPECT_EQ(r->probes[0].verdict, Verdict::kConfirmed);
  EXPECT_EQ(r->probes[1].probe, "bench.engine");
  for (const Feedback& p : r->probes) EXPECT_TRUE(validate_feedback(p).has_value()) << p.probe;
  ASSERT_FALSE(r->feedback.notes.empty());
  EXPECT_NE(r->feedback.notes[0].find("gate pass: all 3 conditions pass; the tightest is condition "),
            std::string::npos)
      << r->feedback.notes[0];
  // The conditions the engine ran under are stated: the engine's own pool (engine.pool_spin_us).
  const auto conditions = std::find_if(r->feedback.notes.begin(), r->feedback.notes.end(),
                                       [](const std::string& n) { return n.starts_with("probe conditions: "); });
  ASSERT_NE(conditions, r->feedback.notes.end());
  EXPECT_NE(conditions->find("engine.pool_spin_us"), std::string::npos) << *conditions;
  EXPECT_NE(conditions->find("pinned"), std::string::npos) << *conditions;
  EXPECT_FALSE(progress.empty());
}

// A gate runs on a synthetic model of every architecture row (gate/synthetic_model.h): tiny
// shapes at the row's defaults (MoE rows with experts, MLA rows with a leading dense layer,
// kimi-linear with KDA and MLA layers), the engine against the float64 reference forward pass.
TEST_F(GateRun, AGateRunsOnASyntheticModelOfEveryArchitecture) {
  for (const Architecture& a : architectures()) {
    const bool kda = a.kda_layers;
    const std::string spec_text = fmt::format(R"toml(name = "arch-{0}"
conditions = ["tokens_equal(cand vs f64)", "logits_max_rel_err(cand vs f64) <= 2e-4"]
[workload]
threads = 1
[workload.engine]
model = "synthetic"
prompts = ["hello world"]
decode_tokens = 4
[workload.engine.synthetic]
arch = "{0}"
dim = 64
layers = {1}
heads = 4
ffn = 64
vocab = 400
context = 64
{2}
[arms.cand]
[arms.f64]
"engine.numerics" = "f64_reference"
)toml",
                                              a.name, kda ? 3 : 2,
                                              !kda                        ? ""
                                              : a.arch == Arch::kQwen3Next ? "pattern = \"kka\"\nkda_head_dim = 16"  // k..., then a
                                                                           : "pattern = \"kak\"\nkda_head_dim = 16");
    auto spec = parse_gate_spec(spec_text, "");
    ASSERT_TRUE(spec.has_value()) << a.name << ": " << spec.error().message();
    GateRunOptions o;
    auto r = run_gate(*spec, o);
    ASSERT_TRUE(r.has_value()) << a.name << ": " << r.error().message();
    EXPECT_EQ(r->verdict.outcome, Outcome::kPass) << a.name << ": " << r->verdict.reason;
    // The record names the row the engine loaded.
    EXPECT_NE(r->probes.at(0).subject.find(fmt::format("engine:{} ", a.name)), std::string::npos)
        << r->probes.at(0).subject;
  }
}

// zone_time_us: the engine runs traced; layers nest inside steps, so their time cannot exceed
// the steps'; a zone that never occurs measures 0; the last run's trace is written and readable.
TEST_F(GateRun, ZoneTimeMeasuresTracedZonesAndWritesTheTrace) {
  std::string text(kEngineGate);
  const std::string conds = "conditions = [\n  \"tokens_equal(tp2 vs tp1)\",\n  \"logits_max_rel_err(tp2 vs tp1) <= 1e-4\",\n"
                            "  \"decode_tok_s(tp2) > 0 and prefill_tok_s(tp1) > 0\",\n]";
  ASSERT_NE(text.find(conds), std::string::npos);
  text.replace(text.find(conds), conds.size(),
               "conditions = [\n  \"zone_time_us(tp1, \\\"step\\\") > 0\",\n"
               "  \"zone_time_us(tp1, \\\"layer\\\") > 0\",\n  \"zone_time_us(tp1, \\\"name~^no_such_zone$\\\") == 0\",\n]");
  auto spec = parse_gate_spec(text, "");
  ASSERT_TRUE(spec.has_value()) << spec.error().message() << "\n" << text;
  GateRunOptions o;
  o.artifact_dir = *cache_dir_ + "/traces";
  auto r = run_gate(*spec, o);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->verdict.outcome, Outcome::kPass) << r->verdict.reason;
  ASSERT_EQ(r->probes.size(), 3u);
  for (const Feedback& p : r->probes) {
    EXPECT_EQ(p.probe, "analyze.zone_time");
    EXPECT_TRUE(validate_feedback(p).has_value());
    ASSERT_EQ(p.artifacts.count("trace"), 1u) << p.subject;
    EXPECT_TRUE(std::filesystem::exists(p.artifacts.at("trace"))) << p.artifacts.at("trace");
  }
  // The gate's own record (what the journal keeps) carries the three traces.
  EXPECT_EQ(r->feedback.artifacts.count("trace"), 1u);
  EXPECT_EQ(r->feedback.artifacts.count("trace.2"), 1u);
  EXPECT_EQ(r->feedback.artifacts.count("trace.3"), 1u);
  const Interval& layer = r->values.at("zone_time_us(tp1, \"layer\")").value;
  const Interval& step = r->values.at("zone_time_us(tp1, \"step\")").value;
  EXPECT_GT(layer.value, 0);
  EXPECT_GT(step.value, 0);  // (layer <= step holds inside one run; these are two measurements)
  EXPECT_EQ(r->values.at("zone_time_us(tp1, \"name~^no_such_zone$\")").value.value, 0);
}

TEST_F(GateRun, AFailingCheapConditionStopsBeforeTheThroughputRuns) {
  std::string text(kEngineGate);
  text.replace(text.find("\"tokens_equal(tp2 vs tp1)\""), 26, "\"logits_max_abs_err(tp2 vs tp1) < 0\"");
  auto spec = parse_gate_spec(text, "");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  GateRunOptions o;
  auto r = run_gate(*spec, o);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->verdict.outcome, Outcome::kFail);
  EXPECT_EQ(r->verdict.deciding, 0);
  EXPECT_EQ(r->feedback.verdict, Verdict::kRefuted);
  EXPECT_EQ(r->values.count("decode_tok_s(tp2)"), 0u);  // never measured
  ASSERT_EQ(r->verdict.conditions.size(), 3u);
  EXPECT_EQ(r->verdict.conditions[2].outcome, Outcome::kInconclusive);
  ASSERT_FALSE(r->verdict.conditions[2].details.empty());
  EXPECT_NE(r->verdict.conditions[2].details[0].find("not evaluated"), std::string::npos);
  EXPECT_NE(r->verdict.reason.find("failed by condition 1 `logits_max_abs_err(tp2 vs tp1) < 0`"), std::string::npos)
      << r->verdict.reason;
}

probe::MachinePeaks generous_peaks() {
  // High enough that check's and bench's speed-of-light flags never fire on a real machine.
  probe::MachinePeaks p;
  p.dram_gbps = 1e4;
  p.gflops = 1e5;
  p.cache_gbps = 3e5;
  p.llc_bytes = 32 << 20;
  return p;
}

constexpr std::string_view kKernelGate = R"toml(name = "rmsnorm-kernel"
conditions = [
  "check_pass(best) and max_rel_err(best) <= 1e-5",
  "max_rel_err(best vs scalar) <= 1e-4 and max_abs_err(best vs scalar) >= 0",
  "time_us(scalar) > 0",
  "time_ratio(best vs scalar) < 100 and speedup(best vs scalar) > 0.01",
]
[workload.kernel]
name = "rmsnorm"
shape = "M4,N256"
budget_s = 0.3
seeds = [1]
[arms.scalar]
"kernel.rmsnorm.variant" = "scalar"
[arms.best]
"kernel.rmsnorm.variant" = "auto"
)toml";

TEST_F(GateRun, AKernelGateChecksAndTimesVariants) {
  auto spec = parse_gate_spec(kKernelGate, "kernel.toml");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  GateRunOptions o;
  o.peaks = generous_peaks();
  auto r = run_gate(*spec, o);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->verdict.outcome, Outcome::kPass) << r->verdict.reason;
  EXPECT_EQ(r->feedback.tier, 2);
  EXPECT_TRUE(validate_feedback(r->feedback).has_value());
  // check best, check best vs scalar, bench scalar, bench best vs scalar.
  ASSERT_EQ(r->probes.size(), 4u);
  EXPECT_EQ(r->probes[0].probe, "check.kernel");
  EXPECT_EQ(r->probes[1].probe, "check.kernel");
  EXPECT_EQ(r->probes[2].probe, "bench.kernel");
  EXPECT_EQ(r->probes[3].probe, "bench.kernel");
  const MetricValue& ratio = r->values.at("time_ratio(best vs scalar)");
  const MetricValue& speedup = r->values.at("speedup(best vs scalar)");
  EXPECT_LE(ratio.value.lo, ratio.value.value);
  EXPECT_LE(ratio.value.value, ratio.value.hi);
  EXPECT_NEAR(speedup.value.value * ratio.value.value, 1, 1e-12);
  EXPECT_NEAR(speedup.value.lo * ratio.value.hi, 1, 1e-12);
  EXPECT_EQ(r->feedback.artifacts.at("spec"), "kernel.toml");
}

// Arms on two kernels: a ReplaySSM step against the plain decode step at the same heads.
constexpr std::string_view kCrossKernelGate = R"toml(name = "replay-vs-plain"
conditions = [
  "check_pass(cand)",
  "time_us(cand) > 0 and time_us(plain) > 0",
  "time_ratio(cand vs plain) > 0 and speedup(cand vs plain) > 0",
]
[workload.kernel]
name = "kda_replay_decode"
shape = "B2,HK1,HV2,K16,V24,T1,F4"
budget_s = 0.2
seeds = [1]
[arms.cand]
"kernel.kda_replay_decode.variant" = "hoisted"
[arms.plain]
kernel = "kda_decode"
shape = "B2,HK1,HV2,K16,V24"
"kernel.kda_decode.variant" = "vtile"
)toml";

TEST_F(GateRun, ArmsOnDifferentKernelsAreTimedEachOnItsOwnKernel) {
  auto spec = parse_gate_spec(kCrossKernelGate, "cross.toml");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  GateRunOptions o;
  o.peaks = generous_peaks();
  auto r = run_gate(*spec, o);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->verdict.outcome, Outcome::kPass) << r->verdict.reason;
  // check cand, bench cand, bench plain, bench cand vs plain.
  ASSERT_EQ(r->probes.size(), 4u);
  EXPECT_EQ(r->probes[0].probe, "check.kernel");
  EXPECT_NE(r->probes[0].subject.find("kda_replay_decode"), std::string::npos) << r->probes[0].subject;
  EXPECT_NE(r->probes[1].subject.find("kernel:kda_replay_decode variant=hoisted shape=B2,HK1,HV2,K16,V24,T1,F4"),
            std::string::npos)
      << r->probes[1].subject;
  EXPECT_NE(r->probes[2].subject.find("kernel:kda_decode variant=vtile shape=B2,HK1,HV2,K16,V24"), std::string::npos)
      << r->probes[2].subject;
  EXPECT_EQ(r->probes[3].subject,
            "kernel:kda_replay_decode variant=hoisted shape=B2,HK1,HV2,K16,V24,T1,F4 vs kernel:kda_decode "
            "variant=vtile shape=B2,HK1,HV2,K16,V24");
  EXPECT_NE(r->probes[3].hypothesis.find("kda_replay_decode/hoisted is faster than kda_decode/vtile"),
            std::string::npos)
      << r->probes[3].hypothesis;
  const MetricValue& ratio = r->values.at("time_ratio(cand vs plain)");
  EXPECT_LE(ratio.value.lo, ratio.value.value);
  EXPECT_LE(ratio.value.value, ratio.value.hi);
  EXPECT_NEAR(r->values.at("speedup(cand vs plain)").value.value * ratio.value.value, 1, 1e-12);
}

TEST_F(GateRun, AnInconclusiveGateSaysWhichConditionAndWhatToDo) {
  auto spec = parse_gate_spec(kKernelGate, "kernel.toml");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  MetricValues v;
  v["check_pass(best)"] = {Interval::point(1), true, ""};
  v["max_rel_err(best)"] = {Interval::point(2e-7), false, ""};
  v["max_abs_err(best vs scalar)"] = {Interval::point(1e-6), false, ""};
  v["max_rel_err(best vs scalar)"] = {Interval::point(1e-7), false, ""};
  v["time_us(scalar)"] = {{1.5, 1.4, 1.6}, false, "us"};
  v["time_ratio(best vs scalar)"] = {{50, 20, 120}, false, ""};  // straddles 100
  v["speedup(best vs scalar)"] = {{0.02, 1 / 120.0, 0.05}, false, ""};
  GateResult r = evaluate_gate(*spec, v, {}, 1.0);
  EXPECT_EQ(r.verdict.outcome, Outcome::kInconclusive);
  EXPECT_EQ(r.verdict.deciding, 3);
  EXPECT_EQ(r.feedback.verdict, Verdict::kInconclusive);
  EXPECT_TRUE(validate_feedback(r.feedback).has_value());
  EXPECT_NE(r.feedback.notes[0].find("gate inconclusive: undecided by condition 4"), std::string::npos)
      << r.feedback.notes[0];
  ASSERT_EQ(r.feedback.next.size(), 1u);
  const Metric* m = r.feedback.find_metric("time_ratio(best vs scalar)");
  ASSERT_NE(m, nullptr);
  ASSERT_TRUE(m->ci95.has_value());
  EXPECT_EQ(m->ci95->second, 120);
  EXPECT_EQ(r.feedback.find_metric("conditions_inconclusive")->value, 1);
}

// Program workloads: a /bin/sh script written into the test's folder stands in for the program
// (the real one is Python: episodes/gates/kv-transfer-overlap.toml). It appends RECUR_KNOBS to
// `calls` beside itself on every run, so the tests see how often and with what it ran.
class ProgramGate : public GateRun {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(*cache_dir_) / ::testing::UnitTest::GetInstance()->current_test_info()->name();
    std::filesystem::create_directories(dir_);
  }

  // A gate over `script` (bench.sh); `workload` adds keys to [workload.program] (runs = 3 is set).
  Result<GateSpec> gate(std::string_view script, std::string_view conditions, std::string_view workload = "",
                        std::string_view arms = "[arms.base]\n[arms.cand]\n\"python.release_gil\" = \"off\"\n") {
    std::ofstream(dir_ / "bench.sh") << "echo \"$RECUR_KNOBS\" >> \"$(dirname \"$0\")/calls\"\n" << script;
    std::string text = fmt::format(
        "name = \"prog\"\nconditions = [{}]\n[workload.program]\ncommand = [\"/bin/sh\", \"{{spec_dir}}/bench.sh\"]\n"
        "runs = 3\n{}\n{}",
        conditions, workload, arms);
    return parse_gate_spec(text, (dir_ / "gate.toml").string());
  }

  // RECUR_KNOBS of every run so far, in run order.
  std::vector<std::string> calls() const {
    std::vector<std::string> out;
    std::ifstream in(dir_ / "calls");
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  }

  std::filesystem::path dir_;
};

// 80 tok/s while the GIL is held across the work, 100 otherwise; the metrics are the last line
// that is a JSON object (not an array, not text), whatever comes before or after it.
constexpr std::string_view kGilScript = R"sh(echo "loading model"
echo '{"prefill_tok_s": 1}'
case " $RECUR_KNOBS " in
  *" python.release_gil=off "*) echo '{"prefill_tok_s": 80, "note": "gil held"}' ;;
  *) echo '{"prefill_tok_s": 100}' ;;
esac
echo '[{"prefill_tok_s": 2}]'
echo "done"
)sh";

TEST_F(ProgramGate, TheArmsRatioDecidesAndChangingTheArmFlipsTheVerdict) {
  auto spec = gate(kGilScript, "\"prefill_ratio(cand vs base) >= 0.95\"");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  auto r = run_gate(*spec, GateRunOptions());
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->verdict.outcome, Outcome::kFail) << r->verdict.reason;
  // Every round's ratio is 80/100, so the median and both ends of its CI are exactly 0.8.
  const Interval& ratio = r->values.at("prefill_ratio(cand vs base)").value;
  EXPECT_EQ(ratio.value, 0.8);
  EXPECT_EQ(ratio.lo, 0.8);
  EXPECT_EQ(ratio.hi, 0.8);
  EXPECT_EQ(r->values.at("prefill_tok_s(cand)").value.value, 80);
  EXPECT_EQ(r->values.at("prefill_tok_s(base)").value.value, 100);
  EXPECT_EQ(r->values.count("decode_tok_s(cand)"), 0u);  // never printed
  ASSERT_EQ(r->probes.size(), 2u);
  for (const Feedback& p : r->probes) {
    EXPECT_EQ(p.probe, "bench.program");
    EXPECT_EQ(p.tier, 3);
    EXPECT_TRUE(validate_feedback(p).has_value()) << p.subject;
    EXPECT_NE(p.subject.find("bench.sh"), std::string::npos) << p.subject;
  }
  // One process per sample, interleaved A B, B A, A B.
  const std::vector<std::string> runs = calls();
  ASSERT_EQ(runs.size(), 6u);
  EXPECT_NE(runs[0], runs[1]);
  EXPECT_EQ(runs[1], runs[2]);
  EXPECT_EQ(runs[3], runs[4]);
  EXPECT_EQ(runs[0], runs[3]);
  EXPECT_EQ(runs[5], runs[1]);

  spec->arms[1].knobs = {{"python.release_gil", "on"}};  // what the agent would change
  ASSERT_EQ(spec->arms[1].name, "cand");
  r = run_gate(*spec, GateRunOptions());
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->verdict.outcome, Outcome::kPass) << r->verdict.reason;
  EXPECT_EQ(r->values.at("prefill_ratio(cand vs base)").value.value, 1);
}

// Under `recur mcp` the server lists the programs its children may run (RECUR_PROGRAM_ALLOW):
// anything else is refused before it starts, naming the program and the flag that allows it.
TEST_F(ProgramGate, AnAllowListRefusesOtherProgramsBeforeTheyRun) {
  auto spec = gate(kGilScript, "\"prefill_ratio(cand vs base) >= 0.95\"");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  for (const char* list : {"", "/usr/bin/python3,/bin/bash"}) {
    setenv(kProgramAllowEnv, list, 1);
    auto r = run_gate(*spec, GateRunOptions());
    ASSERT_FALSE(r.has_value()) << list;
    EXPECT_NE(r.error().message().find("runs /bin/sh, which is not among the programs"), std::string::npos)
        << r.error().message();
    EXPECT_NE(r.error().message().find("--allow-exec /bin/sh"), std::string::npos) << r.error().message();
  }
  EXPECT_TRUE(calls().empty());  // nothing ran
  setenv(kProgramAllowEnv, "/usr/bin/python3,/bin/sh", 1);
  auto r = run_gate(*spec, GateRunOptions());
  unsetenv(kProgramAllowEnv);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->verdict.outcome, Outcome::kFail);
}

TEST_F(ProgramGate, TheProgramSeesExactlyTheArmsKnobsOverTheBase) {
  auto spec = gate("echo '{\"decode_tok_s\": 5}'\n", "\"decode_tok_s(cand) > 0 and decode_tok_s(base) > 0\"", "",
                   "[arms.base]\n[arms.cand]\n\"python.release_gil\" = \"on\"\n");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  GateRunOptions o;
  ASSERT_TRUE(o.base.set("engine.tp", "2").has_value());
  ASSERT_TRUE(o.base.set("python.release_gil", "off").has_value());
  setenv("RECUR_KNOBS", "engine.tp=8", 1);  // this process's own knobs do not leak into the program's
  auto r = run_gate(*spec, o);
  unsetenv("RECUR_KNOBS");
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->verdict.outcome, Outcome::kPass) << r->verdict.reason;
  std::vector<std::string> runs = calls();
  std::sort(runs.begin(), runs.end());
  EXPECT_EQ(runs, (std::vector<std::string>{"engine.tp=2 python.release_gil=off", "engine.tp=2 python.release_gil=off",
                                            "engine.tp=2 python.release_gil=off", "engine.tp=2 python.release_gil=on",
                                            "engine.tp=2 python.release_gil=on", "engine.tp=2 python.release_gil=on"}));
}

TEST_F(ProgramGate, BestOfTakesTheFastestRunAndWarmUpRunsComeFirst) {
  // Run n prints 50, 60 or 70 (n mod 3): any three runs in a row hold a 70.
  auto spec = gate("n=$(wc -l < \"$(dirname \"$0\")/calls\")\nprintf '{\"decode_tok_s\": %d}\\n' $((50 + 10 * (n % 3)))\n",
                   "\"decode_ratio(cand vs base) >= 1\"", "warmup_runs = 2\nbest_of = 3\n");
  ASSERT_TRUE(spec.has_value()) << spec.error().message();
  std::vector<std::string> progress;
  GateRunOptions o;
  o.progress = [&](std::string_view s) { progress.emplace_back(s); };
  auto r = run_gate(*spec, o);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_EQ(r->verdict.outcome, Outcome::kPass) << r->verdict.reason;
  for (const char* arm : {"decode_tok_s(cand)", "decode_tok_s(base)"}) {
    const Interval& v = r->values.at(arm).value;
    EXPECT_EQ(v.value, 70) << arm;
    EXPECT_EQ(v.lo, 70) << arm;
  }
  EXPECT_EQ(r->values.at("decode_ratio(cand vs base)").value.value, 1);
  EXPECT_EQ(calls().size(), 2u * 2 + 3u * 2 * 3);  // warm-up: 2 per arm; then 3 samples x 2 arms x best of 3
  ASSERT_FALSE(progress.empty());
  EXPECT_NE(progress.front().find("bench.program warm-up 1/2 arm"), std::string::npos) << progress.front();
}

// A program that fails: the gate errors, naming the program, the arm and why.
TEST_F(ProgramGate, AFailingProgramIsAnErrorThatSaysWhy) {
  struct Case {
    std::string script, workload, condition, expected;
  };
  const std::vector<Case> cases = {
      {"echo 'no such model: x.gguf' >&2\nexit 3\n", "", "prefill_tok_s(cand) > 0",
       "(arm cand): exit code 3: no such model: x.gguf"},
      {"echo 'hello'\n", "", "prefill_tok_s(cand) > 0",
       "(arm cand): printed no JSON object on stdout (expected a line like {\"prefill_tok_s\": 1234.5})"},
      {"true\n", "", "prefill_tok_s(cand) > 0", "(arm cand): printed no JSON object on stdout"},
      {"echo '{\"prefill_tok_s\": 0}'\n", "", "prefill_tok_s(cand) > 0",
       "(arm cand): printed prefill_tok_s = 0, expected a positive number"},
      {"echo '{\"prefill_tok_s\": \"fast\"}'\n", "", "prefill_tok_s(cand) > 0",
       "(arm cand): printed prefill_tok_s = \"fast\", expected a positive number"},
      {"echo '{\"tokens\": 12}'\n", "", "prefill_tok_s(cand) > 0",
       "(arm cand): printed neither prefill_tok_s nor decode_tok_s: {\"tokens\":12}"},
      {"echo '{\"prefill_tok_s\": 10}'\n", "", "decode_ratio(cand vs base) >= 1",
       "decode_ratio(cand vs base) asks for what [workload.program] did not print (decode_tok_s of arm cand)"},
      {"sleep 5\n", "timeout_s = 0.2\n", "prefill_tok_s(cand) > 0",
       "(arm cand): ran over timeout_s = 0.2 and was stopped"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.script);
    auto spec = gate(c.script, "\"" + c.condition + "\"", c.workload);
    ASSERT_TRUE(spec.has_value()) << spec.error().message();
    auto r = run_gate(*spec, GateRunOptions());
    ASSERT_FALSE(r.has_value());
    const std::string m = r.error().message();
    EXPECT_NE(m.find(c.expected), std::string::npos) << m;
    EXPECT_NE(m.find((dir_ / "gate.toml").string()), std::string::npos) << m;  // the spec
    if (c.condition.find("ratio") == std::string::npos) {
      EXPECT_NE(m.find("[workload.program] `/bin/sh {spec_dir}/bench.sh` (arm cand)"), std::string::npos) << m;
    }
  }
}

TEST_F(ProgramGate, PlaceholdersBecomeThePythonTheSpecsFolderAndTheModel) {
  std::ofstream(dir_ / "m.gguf") << "not read";
  const std::string text = "conditions = [\"prefill_tok_s(base) > 0\"]\n[workload.program]\nmodel = \"m.gguf\"\n"
                           "command = [\"{python}\", \"{spec_dir}/run.py\", \"--model={model}\", \"{spec_dir}\"]\n"
                           "[arms.base]\n";
  const std::string dir = dir_.string();
  auto s = parse_gate_spec(text, dir + "/gate.toml");
  ASSERT_TRUE(s.has_value()) << s.error().message();
  setenv("RECUR_PYTHON", "/opt/py/bin/python3", 1);
  auto argv = program_argv(*s, {"--trace", "t.json"});
  unsetenv("RECUR_PYTHON");
  ASSERT_TRUE(argv.has_value()) << argv.error().message();
  EXPECT_EQ(*argv, (std::vector<std::string>{"/opt/py/bin/python3", dir + "/run.py", "--model=" + dir + "/m.gguf", dir,
                                             "--trace", "t.json"}));
  argv = program_argv(*s);
  ASSERT_TRUE(argv.has_value());
  EXPECT_EQ(argv->front(), "/usr/bin/python3");  // the Python recur's bindings are built for
  // A spec read from text, or from a file in the current folder: {spec_dir} is ".".
  for (const char* path : {"", "gate.toml"}) {
    auto t = parse_gate_spec("conditions = [\"prefill_tok_s(a) > 0\"]\n[workload.program]\n"
                             "command = [\"{spec_dir}/x.sh\"]\n[arms.a]\n",
                             path);
    ASSERT_TRUE(t.has_value()) << t.error().message();
    EXPECT_EQ(program_argv(*t)->front(), "./x.sh") << path;
  }
}

}  // namespace
}  // namespace recur::gate
