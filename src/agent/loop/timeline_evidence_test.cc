// Timeline attribution on a program gate: a /bin/sh program stands in for the Python prefill
// server and, run with its trace flag, writes a Chrome JSON trace made by hand (the lock events
// as trace/traced_mutex.h and trace/external_lock.h record them: X events of category lock_wait
// or lock_held, args mutex and holder_tid). Which trace it writes follows the arm's knobs, as the
// real program's timeline does: python.release_gil=off serializes the KV transfer behind the
// GIL; otherwise the transfer hides behind the MoE all-to-alls.
#include "loop/timeline_evidence.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "loop/episode.h"
#include "loop/evidence.h"
#include "journal/journal.h"
#include "gate/gate.h"

namespace recur::agent {
namespace {

namespace fs = std::filesystem;

// scheduler (tid 10): prefill { moe.dispatch, moe.combine, layer_epilogue { GIL held [420, 700) },
//                     moe.dispatch }
// kv_transfer (tid 20): kv_transfer.send [450, 900) { GIL wait [460, 700), holder 10 },
//                       kv_transfer.send [1000, 1200)
// The sends never overlap a dispatch or combine: the transfer waited for the GIL instead.
constexpr std::string_view kSerializedTrace = R"json({"traceEvents": [
{"name": "thread_name", "ph": "M", "pid": 1, "tid": 10, "args": {"name": "scheduler"}},
{"name": "thread_name", "ph": "M", "pid": 1, "tid": 20, "args": {"name": "kv_transfer"}},
{"name": "prefill", "cat": "engine", "ph": "X", "ts": 0, "dur": 1500, "pid": 1, "tid": 10},
{"name": "moe.dispatch", "cat": "engine", "ph": "X", "ts": 100, "dur": 100, "pid": 1, "tid": 10},
{"name": "moe.combine", "cat": "engine", "ph": "X", "ts": 300, "dur": 100, "pid": 1, "tid": 10},
{"name": "layer_epilogue", "cat": "python", "ph": "X", "ts": 400, "dur": 350, "pid": 1, "tid": 10},
{"name": "GIL", "cat": "lock_held", "ph": "X", "ts": 420, "dur": 280, "pid": 1, "tid": 10, "args": {"mutex": "GIL"}},
{"name": "moe.dispatch", "cat": "engine", "ph": "X", "ts": 1300, "dur": 100, "pid": 1, "tid": 10},
{"name": "kv_transfer.send", "cat": "transfer", "ph": "X", "ts": 450, "dur": 450, "pid": 1, "tid": 20},
{"name": "GIL", "cat": "lock_wait", "ph": "X", "ts": 460, "dur": 240, "pid": 1, "tid": 20,
 "args": {"mutex": "GIL", "holder_tid": 10}},
{"name": "kv_transfer.send", "cat": "transfer", "ph": "X", "ts": 1000, "dur": 200, "pid": 1, "tid": 20}
]})json";

// Each send lies inside a dispatch or combine; no lock events.
constexpr std::string_view kOverlappedTrace = R"json({"traceEvents": [
{"name": "thread_name", "ph": "M", "pid": 1, "tid": 10, "args": {"name": "scheduler"}},
{"name": "thread_name", "ph": "M", "pid": 1, "tid": 20, "args": {"name": "kv_transfer"}},
{"name": "moe.dispatch", "cat": "engine", "ph": "X", "ts": 100, "dur": 300, "pid": 1, "tid": 10},
{"name": "moe.combine", "cat": "engine", "ph": "X", "ts": 500, "dur": 300, "pid": 1, "tid": 10},
{"name": "kv_transfer.send", "cat": "transfer", "ph": "X", "ts": 150, "dur": 200, "pid": 1, "tid": 20},
{"name": "kv_transfer.send", "cat": "transfer", "ph": "X", "ts": 550, "dur": 200, "pid": 1, "tid": 20}
]})json";

// `--trace PATH` copies the trace the arm's knobs call for; every run prints its throughput.
constexpr std::string_view kProgram = R"sh(dir=$(dirname "$0")
trace=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--trace" ]; then trace="$2"; shift; fi
  shift
done
if [ -n "$trace" ] && [ ! -e "$dir/no_trace" ]; then
  case " $RECUR_KNOBS " in
    *" python.release_gil=off "*) cp "$dir/serialized.json" "$trace" ;;
    *) cp "$dir/overlapped.json" "$trace" ;;
  esac
fi
echo '{"prefill_tok_s": 100}'
)sh";

constexpr std::string_view kGate = R"toml(name = "overlap"
conditions = ["prefill_ratio(cand vs base) >= 0.95"]
[workload.program]
command = ["/bin/sh", "{spec_dir}/prefill.sh"]
runs = 3
[workload.program.timeline]
background = "name=kv_transfer.send"
foreground = 'name~^moe\.(dispatch|combine)$'
[arms.base]
[arms.cand]
"python.release_gil" = "off"
)toml";

class TimelineEvidence : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / fmt::format("recur-timeline-test-{}-{}", ::getpid(),
                                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write("serialized.json", kSerializedTrace);
    write("overlapped.json", kOverlappedTrace);
    write("prefill.sh", kProgram);
    write("gate.toml", kGate);
    auto j = Journal::open((dir_ / "journal.db").string());
    ASSERT_TRUE(j.has_value()) << j.error().message();
    journal_ = std::move(*j);
    auto run = journal_->begin_run("r1", "episode.toml", {});
    ASSERT_TRUE(run.has_value()) << run.error().message();
    run_id_ = run->id;
    log_ = std::make_unique<ExperimentLog>(*journal_, run_id_);
  }
  void TearDown() override {
    log_.reset();
    journal_.reset();
    fs::remove_all(dir_);
  }

  void write(const std::string& name, std::string_view text) { std::ofstream(dir_ / name) << text; }

  gate::GateSpec spec(std::string_view text = kGate) {
    auto s = gate::parse_gate_spec(text, (dir_ / "gate.toml").string());
    EXPECT_TRUE(s.has_value()) << s.error().message();
    return s ? *s : gate::GateSpec{};
  }

  std::vector<ExperimentRecord> experiments() {
    auto e = journal_->experiments(run_id_);
    EXPECT_TRUE(e.has_value()) << e.error().message();
    return e ? *e : std::vector<ExperimentRecord>{};
  }

  // attribute_gap on the episode over kGate (or `gate`), the gate failing at prefill_ratio 0.8.
  Result<Evidence> attribute(std::string_view gate_text, std::string_view release_gil) {
    write("gate.toml", gate_text);
    write("episode.toml", fmt::format("name = \"overlap\"\ngate = \"gate.toml\"\ncandidate = \"cand\"\n[start]\n"
                                      "\"python.release_gil\" = \"{}\"\n",
                                      release_gil));
    auto ep = load_episode((dir_ / "episode.toml").string());
    if (!ep) return unexpected(ep.error());
    gate::MetricValues values;
    values["prefill_ratio(cand vs base)"] = {gate::Interval::point(0.8), false, ""};
    gate::GateResult r = gate::evaluate_gate(ep->gate, values, {}, 1.0);
    EXPECT_EQ(r.verdict.outcome, gate::Outcome::kFail);
    GateState state{r.verdict, r.values};
    return attribute_gap(*ep, ep->start, state, *log_, {.instruction_counts = false, .trace_dir = trace_dir()});
  }

  std::string trace_dir() const { return (dir_ / "traces").string(); }

  fs::path dir_;
  std::unique_ptr<Journal> journal_;
  int64_t run_id_ = 0;
  std::unique_ptr<ExperimentLog> log_;
};

bool has_finding(const Evidence& ev, std::string_view text) {
  for (const std::string& f : ev.findings)
    if (f.find(text) != std::string::npos) return true;
  return false;
}

TEST_F(TimelineEvidence, AGilWaitAndASerializedTransferAreAttributedToTheLockThenTheThread) {
  Evidence ev;
  ev.condition = "prefill_ratio(cand vs base) >= 0.95";
  auto r = timeline_evidence(spec(), "cand", *log_, trace_dir(), ev);
  ASSERT_TRUE(r.has_value()) << r.error().message();
  ASSERT_EQ(r->components.size(), 2u);
  const Attribution& lock = r->components[0];
  EXPECT_EQ(lock.component, "lock:gil");
  EXPECT_EQ(lock.share, 1);  // the only lock waited on
  EXPECT_NE(lock.evidence.find("kv_transfer (1/20) waited"), std::string::npos) << lock.evidence;
  EXPECT_NE(lock.evidence.find("on GIL"), std::string::npos) << lock.evidence;
  EXPECT_NE(lock.evidence.find("held by scheduler (1/10) inside prefill/layer_epilogue"), std::string::npos)
      << lock.evidence;
  const Attribution& thread = r->components[1];
  EXPECT_EQ(thread.component, "thread:kv_transfer");
  EXPECT_EQ(thread.share, 1);  // the background never overlaps
  const std::string overlap_line =
      "'name=kv_transfer.send' (0.7 ms busy) overlaps 'name~^moe\\.(dispatch|combine)$' for 0.0% of its time; 2 of "
      "its zones never overlap it";
  EXPECT_EQ(thread.evidence, overlap_line);
  EXPECT_TRUE(has_finding(*r, overlap_line));
  EXPECT_TRUE(has_finding(*r, "lock:gil: kv_transfer (1/20) waited"));

  const std::vector<ExperimentRecord> e = experiments();
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0].spec.probe, "analyze.overlap");
  EXPECT_EQ(e[0].spec.tier, 3);
  ASSERT_TRUE(e[0].feedback.has_value());
  EXPECT_EQ(e[0].feedback->verdict, Verdict::kInconclusive);  // analyses measure; they do not judge
  ASSERT_EQ(e[0].feedback->artifacts.count("trace"), 1u);
  const std::string trace = e[0].feedback->artifacts.at("trace");
  EXPECT_EQ(fs::path(trace), fs::path(trace_dir()) / "overlap-cand-step0.json.gz");  // the experiment's step
  EXPECT_TRUE(fs::exists(trace)) << trace;  // kept for the report
  EXPECT_EQ(e[1].spec.probe, "analyze.locks");
  ASSERT_TRUE(e[1].feedback.has_value());
  EXPECT_EQ(e[1].feedback->artifacts.at("trace"), trace);  // the same run's trace
  ASSERT_FALSE(e[1].feedback->attribution.empty());
  EXPECT_EQ(e[1].feedback->attribution[0].component, "lock:gil");
  // The same trace split by component: context in the findings, not a ranking.
  EXPECT_EQ(e[2].spec.probe, "analyze.time_split");
  EXPECT_EQ(e[2].spec.tier, 0);
  EXPECT_TRUE(has_finding(*r, "op:moe_dispatch takes"));
  EXPECT_TRUE(has_finding(*r, "lock:gil takes"));
}

TEST_F(TimelineEvidence, ATransferThatHidesBehindTheForegroundExplainsNothing) {
  gate::GateSpec s = spec();
  s.arms[1].knobs = {{"python.release_gil", "on"}};
  ASSERT_EQ(s.arms[1].name, "cand");
  auto r = timeline_evidence(s, "cand", *log_, trace_dir(), Evidence{});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_TRUE(r->components.empty());  // no lock waits, and the background overlaps
  EXPECT_TRUE(has_finding(*r, "for 100.0% of its time; 0 of its zones never overlap it"));
  EXPECT_EQ(experiments().size(), 3u);
}

// attribute_gap: a throughput condition on a program gate with a timeline reads the timeline;
// without one, the time split of the candidate's traced run against the reference arm's; when
// the timeline explains nothing, the knobs in which the arms differ.
TEST_F(TimelineEvidence, AttributeGapUsesTheTimelineAndFallsBackToTheConfigDiff) {
  auto ev = attribute(kGate, "off");
  ASSERT_TRUE(ev.has_value()) << ev.error().message();
  ASSERT_FALSE(ev->components.empty());
  EXPECT_EQ(ev->components[0].component, "lock:gil");
  EXPECT_EQ(ev->condition, "prefill_ratio(cand vs base) >= 0.95");
  EXPECT_EQ(experiments().size(), 3u);

  std::string no_timeline(kGate);
  no_timeline.erase(no_timeline.find("[workload.program.timeline]"),
                    no_timeline.find("[arms.base]") - no_timeline.find("[workload.program.timeline]"));
  ev = attribute(no_timeline, "off");
  ASSERT_TRUE(ev.has_value()) << ev.error().message();
  std::vector<ExperimentRecord> e = experiments();
  ASSERT_EQ(e.size(), 4u);
  EXPECT_EQ(e[3].spec.probe, "analyze.time_split");
  EXPECT_EQ(e[3].spec.tier, 3);  // two traced runs: cand, then base
  ASSERT_FALSE(ev->components.empty());
  // The candidate's excess over base is its GIL zones (520 us of the 1450 us it spends over base;
  // the rest is in zones of no known component), measured, not a knob count.
  EXPECT_EQ(ev->components[0].component, "lock:gil");
  EXPECT_NEAR(ev->components[0].share, 520.0 / 1450.0, 1e-6);
  EXPECT_NE(ev->components[0].evidence.find("520 us per run under cand against 0 us under base"), std::string::npos)
      << ev->components[0].evidence;
  EXPECT_EQ(e[3].feedback->artifacts.count("reference_trace"), 1u);

  // A timeline that shows no cause (the transfer overlaps): the config diff after it.
  ev = attribute(kGate, "on");
  ASSERT_TRUE(ev.has_value()) << ev.error().message();
  e = experiments();
  ASSERT_EQ(e.size(), 8u);
  EXPECT_EQ(e[4].spec.probe, "analyze.overlap");
  EXPECT_EQ(e[5].spec.probe, "analyze.locks");
  EXPECT_EQ(e[6].spec.probe, "analyze.time_split");
  EXPECT_EQ(e[7].spec.probe, "analyze.config_diff");
  EXPECT_TRUE(has_finding(*ev, "for 100.0% of its time"));
}

// A program that writes no trace: both timeline experiments are recorded as failed, naming why,
// and attribution goes on with the config diff.
TEST_F(TimelineEvidence, AProgramThatWritesNoTraceFailsItsExperimentsNotTheAttribution) {
  write("no_trace", "");
  auto ev = attribute(kGate, "off");
  ASSERT_TRUE(ev.has_value()) << ev.error().message();
  const std::vector<ExperimentRecord> e = experiments();
  ASSERT_EQ(e.size(), 4u);
  ASSERT_TRUE(e[0].feedback.has_value());
  EXPECT_EQ(e[0].feedback->verdict, Verdict::kFailed);
  std::string notes;
  for (const std::string& n : e[0].feedback->notes) notes += n + "\n";
  EXPECT_NE(notes.find("(arm cand): run with --trace"), std::string::npos) << notes;
  EXPECT_NE(notes.find("but wrote no trace there"), std::string::npos) << notes;
  EXPECT_EQ(e[1].feedback->verdict, Verdict::kFailed);
  EXPECT_EQ(e[2].feedback->verdict, Verdict::kFailed);  // the split of the trace that is not there
  EXPECT_EQ(e[3].spec.probe, "analyze.config_diff");
  ASSERT_FALSE(ev->components.empty());
  EXPECT_EQ(ev->components[0].component, "lock:gil");
}

// A trace the reader had to repair (a B event never closed) says so in every record built on it
// and in the findings: a guessed duration is not a measurement.
TEST_F(TimelineEvidence, TheReadersRecoveriesReachTheRecordsAndTheFindings) {
  std::string repaired(kSerializedTrace);
  repaired.insert(repaired.rfind(']'), R"json(,
{"name": "kv_transfer.send", "cat": "transfer", "ph": "B", "ts": 1300, "pid": 1, "tid": 20})json");
  write("serialized.json", repaired);
  auto r = timeline_evidence(spec(), "cand", *log_, trace_dir(), Evidence{});
  ASSERT_TRUE(r.has_value()) << r.error().message();
  EXPECT_TRUE(has_finding(*r, ": recovered: "));
  for (const ExperimentRecord& e : experiments()) {
    ASSERT_TRUE(e.feedback.has_value());
    ASSERT_FALSE(e.feedback->notes.empty()) << e.spec.probe;
    EXPECT_NE(e.feedback->notes.front().find(": recovered: "), std::string::npos)
        << e.spec.probe << ": " << e.feedback->notes.front();
  }
}

// A resumed run replays the timeline's experiments from the journal, and a new traced run then
// keeps its own trace: the one a replayed experiment names is not overwritten.
TEST_F(TimelineEvidence, AResumedRunReplaysTheTimelineAndKeepsEarlierTraces) {
  const gate::GateSpec serialized = spec();
  auto first = timeline_evidence(serialized, "cand", *log_, trace_dir(), Evidence{});
  ASSERT_TRUE(first.has_value()) << first.error().message();
  const std::string first_trace = experiments()[0].feedback->artifacts.at("trace");

  ExperimentLog resumed(*journal_, run_id_);  // what resume_run builds
  auto again = timeline_evidence(serialized, "cand", resumed, trace_dir(), Evidence{});
  ASSERT_TRUE(again.has_value()) << again.error().message();
  EXPECT_EQ(resumed.replayed(), 3);
  EXPECT_EQ(resumed.new_experiments(), 0);
  ASSERT_EQ(again->components.size(), first->components.size());
  EXPECT_EQ(again->components[0].evidence, first->components[0].evidence);

  gate::GateSpec overlapped = serialized;
  overlapped.arms[1].knobs = {{"python.release_gil", "on"}};
  auto next = timeline_evidence(overlapped, "cand", resumed, trace_dir(), Evidence{});
  ASSERT_TRUE(next.has_value()) << next.error().message();
  const std::vector<ExperimentRecord> e = experiments();
  ASSERT_EQ(e.size(), 6u);
  EXPECT_NE(e[3].feedback->artifacts.at("trace"), first_trace);
  std::ifstream in(first_trace);
  const std::string kept((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_TRUE(kept == kSerializedTrace) << first_trace << " was overwritten";
}

}  // namespace
}  // namespace recur::agent
