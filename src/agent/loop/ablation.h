// The run's last step after a pass with two or more knobs changed: a paired ablation of each
// kept change. Each changed knob is put back to its start value in turn (a gate experiment whose
// diff is that value); when the gate still passes without it, the change is dropped: it no
// longer matters (another change subsumed it), and the root cause lists only changes whose
// removal hurts. Stops early when `budget_left` says so.
// Not thread-safe (it times things).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "loop/gate_state.h"
#include "loop/gate_step.h"

namespace recur::agent {

struct AblationResult {
  std::vector<std::string> dropped;  // knobs put back to their start value
};

// `config`, `state` and `g` (the last passing gate experiment) follow each dropped change.
Result<AblationResult> ablate_kept_changes(const Episode& episode, GateStep& gate, const std::function<bool()>& budget_left,
                                           KnobMap& config, GateState& state, LoggedExperiment& g);

}  // namespace recur::agent
