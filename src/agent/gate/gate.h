// Acceptance gates: a TOML spec names a workload, arms (knob configurations) and conditions over
// metric(arm) calls; run_gate() measures what the conditions need with the existing probes and
// decides pass, fail or inconclusive from the CIs (docs/agent.md).
//
//   auto spec = gate::load_gate_spec("episodes/gates/tp-agreement.toml");   // all checks, no runs
//   auto result = gate::run_gate(*spec, {.base = knobs});
//   result->feedback  // probe "gate": confirmed = pass, refuted = fail, inconclusive
//
// Probes run cheapest first (check.kernel, bench.kernel, the engine's agreement pass, engine
// throughput); with stop_at_first_failure, a condition that fails on the cheap metrics ends the
// run before the expensive ones (the remaining conditions are reported as not evaluated).
// The loop (src/agent) uses the same calls: it edits a spec's arms (the candidate is its current
// configuration) and reads GateResult.
// Not thread-safe: one gate runs at a time (its timings would be each other's noise).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/feedback.h"
#include "core/knobs.h"
#include "core/status.h"
#include "gate/evaluate.h"
#include "gate/expr.h"
#include "gate/interval.h"
#include "gate/metrics.h"
#include "gate/spec.h"
#include "probe/bench_roofline.h"

namespace recur::gate {

struct GateRunOptions {
  Config base;  // knobs set for every arm (`--set`); an arm's own assignments win
  bool stop_at_first_failure = true;
  std::function<void(std::string_view)> progress;  // one line per step ("bench.engine run 2/5 arm tp2")
  std::optional<probe::MachinePeaks> peaks;         // kernel probes; default: measured once and cached
  std::string artifact_dir;  // where probes write traces (zone_time_us); "" = none are written
  std::string track_reads_of;  // an arm whose knob reads GateResult::knobs_read records
};

struct GateResult {
  GateVerdict verdict;
  MetricValues values;           // every metric measured, by MetricRequest::key()
  std::vector<Feedback> probes;  // the Feedback of every probe run, in run order
  Feedback feedback;             // the gate's own record (probe "gate")
  // The knobs the workload read under arm track_reads_of (sorted), as far as this process
  // sees; absent when no arm was tracked or the workload is a program (other processes).
  std::optional<std::vector<std::string>> knobs_read;
};

Result<GateResult> run_gate(const GateSpec& spec, const GateRunOptions& options);

// Evaluates the spec's conditions on given values (no probes run): what run_gate does after
// measuring. A condition whose metrics are missing is reported inconclusive and "not evaluated".
GateResult evaluate_gate(const GateSpec& spec, MetricValues values, std::vector<Feedback> probes, double cost_s);

// pass -> confirmed, fail -> refuted, inconclusive -> inconclusive.
Verdict verdict_for_outcome(Outcome o);

}  // namespace recur::gate
