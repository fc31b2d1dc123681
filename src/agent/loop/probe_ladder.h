// The probe ladder (docs/agent.md, "The probe ladder"): one proposed knob change validated
// cheapest first, each rung a journal experiment that may end it:
//   tier 1  check.kernel, when the change selects a kernel variant: it must pass against
//           float64, and under a numerics condition be at least 2x more accurate than the
//           variant it replaces;
//   tier 2  bench.kernel, when the gate times that kernel: a significant gain against the
//           current variant (interleaved rounds, CI of the ratio);
//   else, under a speed condition, bench.ab: a paired, interleaved A/B of the current
//           configuration against the change on the gate's own workload (a ratio whose CI
//           clears 1 in the change's favour; no significant effect is reverted);
//   the gate: kept only when strictly closer to passing (gate_state.h), with the hypothesis's
//           prediction checked in its record (candidate_rank.h).
// The experiment limit is exact: a rung that would pass it is not started.
// Not thread-safe (it times things).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loop/evidence.h"
#include "loop/gate_state.h"
#include "loop/gate_step.h"
#include "loop/proposal.h"

namespace recur::agent {

// One kept change and why: the root cause the agent found.
struct Finding {
  int64_t step = 0;  // the gate experiment that kept it
  std::string hypothesis;
  std::string knob, from, to;
  std::string component;
  std::vector<std::string> evidence;  // attribution findings at the time
  std::string gain;                   // "bench: 1.11x faster [1.08, 1.14]; gate: 2 -> 1 failing"
};

// What one validation ended in.
struct Validation {
  std::optional<Finding> kept;  // the change (the pair's second change, in a lookahead) was kept
  // When the gate reverted a change that a lower rung had confirmed on its own component (the
  // kernel's error fell at least 2x against float64, or its kernel bench was significantly
  // faster): that rung's evidence, and the reverting gate experiment. The loop may look one
  // step further from such a change (loop.cc); empty otherwise.
  std::string local_confirmation;
  std::optional<LoggedExperiment> reverted_gate;
};

// A lookahead's context for validate(): the configuration already includes `first` (reverted
// alone), and the gate keeps the pair only when strictly closer than `before` (the state before
// both); its gate experiment's diff is both changes, so the journal's kept diffs stay the truth.
struct PairContext {
  Candidate first;
  const GateState* before = nullptr;
  std::string licensed_by;
};

class ProbeLadder {
 public:
  ProbeLadder(const Episode& episode, ExperimentLog& log, GateStep& gate, Progress progress)
      : ep_(episode), log_(log), gate_(gate), progress_(std::move(progress)) {}

  // Validates a kSet proposal against the configuration, the gate's state and the evidence it
  // was made from. `kept` holds the finding when the change is kept, and the keeping gate
  // experiment is left in `g`; empty when a rung refuted it (or the experiment limit came first).
  // With `pair`, the change is the second of a pair (see PairContext).
  Result<Validation> validate(const Proposal& p, const KnobMap& config, const GateState& state, const Evidence& ev,
                              LoggedExperiment& g, const PairContext* pair = nullptr);

  // check.kernel of one variant (on the gate's kernel workload when it is that kernel's); each
  // (kernel, variant) runs once per run and is reused, which a replay reproduces.
  Result<LoggedExperiment> check_variant(const gate::GateSpec& spec, const std::string& kernel,
                                         const std::string& variant, const KnobDiff& diff);

 private:
  bool at_limit() const { return log_.at_step_limit(); }
  Result<std::optional<LoggedExperiment>> paired_ab(const gate::GateSpec& spec, const KnobMap& config, const KnobMap& next,
                                                    const gate::Condition& deciding, const Proposal& p,
                                                    const KnobDiff& diff);

  const Episode& ep_;
  ExperimentLog& log_;
  GateStep& gate_;
  Progress progress_;
  std::map<std::string, LoggedExperiment> checks_;
};

}  // namespace recur::agent
