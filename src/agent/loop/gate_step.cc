#include "loop/gate_step.h"

#include <algorithm>

#include <fmt/format.h>

#include "loop/gate_state.h"
#include "gate/gate.h"

namespace recur::agent {

int gate_tier(const gate::GateSpec& spec) {
  int t = 0;
  for (const gate::MetricRequest& r : spec.requests) t = std::max(t, r.def->tier);
  return t;
}

Progress indented(const Progress& progress) {
  return [progress](std::string_view line) {
    if (progress) progress(fmt::format("    {}", line));
  };
}

Result<LoggedExperiment> GateStep::run(const KnobMap& config, std::string hypothesis, KnobDiff diff,
                                       const Decide& decide, const Annotate& annotate) {
  const gate::GateSpec spec = gate_with_candidate(ep_, config);
  return log_.run({.hypothesis = std::move(hypothesis), .probe = "gate", .tier = gate_tier(spec), .config_diff = diff},
                  [&]() -> Result<Feedback> {
                    gate::GateRunOptions go;
                    go.artifact_dir = paths_.trace_dir();  // traces a gate records (zone_time_us)
                    go.progress = indented(progress_);
                    go.track_reads_of = ep_.candidate;
                    RECUR_ASSIGN_OR_RETURN(gate::GateResult r, gate::run_gate(spec, go));
                    if (r.knobs_read) r.feedback.notes.push_back(knobs_read_note(*r.knobs_read));
                    if (annotate) annotate(r.feedback);
                    return std::move(r.feedback);
                  },
                  decide ? decide : [](const Feedback&) { return Decision::kNone; });
}

}  // namespace recur::agent
