#include "loop/ablation.h"

#include <fmt/format.h>

#include "core/knobs.h"

namespace recur::agent {

Result<AblationResult> ablate_kept_changes(const Episode& episode, GateStep& gate, const std::function<bool()>& budget_left,
                                           KnobMap& config, GateState& state, LoggedExperiment& g) {
  AblationResult out;
  std::vector<std::string> changed;
  for (const auto& [k, v] : config)
    if (auto it = episode.start.find(k); it == episode.start.end() || it->second != v) changed.push_back(k);
  if (changed.size() < 2) return out;
  for (const std::string& k : changed) {
    if (!budget_left()) break;
    KnobMap without = config;
    std::string back;
    if (auto it = episode.start.find(k); it != episode.start.end()) back = it->second;
    else if (const KnobSpec* spec = KnobRegistry::global().find(k)) back = spec->default_value;
    without[k] = back;
    const gate::GateSpec spec = gate_with_candidate(episode, without);
    RECUR_ASSIGN_OR_RETURN(
        LoggedExperiment a,
        gate.run(without,
                 fmt::format("ablation: without {}={} (back to {}) the gate still passes, so the change no longer matters",
                             k, config.at(k), back),
                 {{k, back}}, [&](const Feedback& f) {
                   return gate_state_from_feedback(spec, f).passed() ? Decision::kKeep : Decision::kRevert;
                 }));
    if (a.decision != Decision::kKeep) continue;
    config = without;
    state = gate_state_from_feedback(spec, a.feedback);
    g = a;
    out.dropped.push_back(k);
  }
  return out;
}

}  // namespace recur::agent
