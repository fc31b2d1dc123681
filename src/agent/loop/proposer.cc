// open_changes and apply_change: what every proposer starts from.
#include "loop/proposer.h"

#include <set>

#include "loop/candidate_rank.h"

namespace recur::agent {

Result<std::vector<Candidate>> open_changes(const AgentState& state) {
  const std::set<std::string, std::less<>> fixed(state.episode->fixed.begin(), state.episode->fixed.end());
  Config current;
  for (const auto& [k, v] : state.config) RECUR_RETURN_IF_ERROR(current.set(k, v));
  std::vector<Candidate> out;
  std::set<std::string> seen;
  for (const Attribution& a : state.evidence.components) {
    for (Candidate& c : candidates_for(a.component, current, fixed)) {
      if (state.tried.count(c.key()) || state.visited.count(apply_change(state.config, c))) continue;
      // A knob the gate's workload never read cannot change what it measures.
      if (state.gate.live_knobs && !state.gate.live_knobs->count(c.knob)) continue;
      if (!seen.insert(c.key()).second) continue;
      out.push_back(std::move(c));
    }
  }
  const gate::GateSpec spec = gate_with_candidate(*state.episode, state.config);
  rank_changes(out, {.spec = &spec, .gate = &state.gate, .evidence = &state.evidence,
                     .candidate_arm = state.episode->candidate});
  return out;
}

std::map<std::string, std::string> apply_change(const std::map<std::string, std::string>& config, const Candidate& c) {
  auto next = config;
  next[c.knob] = c.value;
  return next;
}

}  // namespace recur::agent
