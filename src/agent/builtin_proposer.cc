#include "agent/builtin_proposer.h"

#include <fmt/format.h>

namespace recur::agent {

Result<std::optional<Proposal>> BuiltinProposer::propose(const AgentState& state) {
  const std::set<std::string, std::less<>> fixed(state.episode->fixed.begin(), state.episode->fixed.end());
  Config current;
  for (const auto& [k, v] : state.config) RECUR_RETURN_IF_ERROR(current.set(k, v));
  std::string findings;
  for (const std::string& f : state.evidence.findings) findings += (findings.empty() ? "" : "; ") + f;
  for (const Attribution& a : state.evidence.components) {
    for (Candidate& c : candidates_for(a.component, current, fixed)) {
      if (state.tried.count(c.key()) || state.visited.count(apply_change(state.config, c))) continue;
      Proposal p;
      p.hypothesis = fmt::format("{} explains {:.0f}% of `{}` ({}){}; {} {} -> {} ({}) should close the gap",
                                 a.component, 100 * a.share, state.evidence.condition, a.evidence,
                                 findings.empty() ? "" : "; " + findings, c.knob, c.from, c.value, c.why);
      p.change = std::move(c);
      return std::optional<Proposal>(std::move(p));
    }
  }
  return std::optional<Proposal>();
}

}  // namespace recur::agent
