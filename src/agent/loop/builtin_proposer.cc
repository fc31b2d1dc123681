#include "loop/builtin_proposer.h"

#include <fmt/format.h>

namespace recur::agent {

Result<std::optional<Proposal>> BuiltinProposer::propose(const AgentState& state) {
  RECUR_ASSIGN_OR_RETURN(std::vector<Candidate> open, open_changes(state));
  if (open.empty()) return std::optional<Proposal>();
  Candidate& c = open.front();
  const Attribution* a = nullptr;
  for (const Attribution& x : state.evidence.components)
    if (x.component == c.component) a = &x;
  std::string findings;
  for (const std::string& f : state.evidence.findings) {
    if (a != nullptr && !a->evidence.empty() && f.find(a->evidence) != std::string::npos) continue;  // said above
    findings += (findings.empty() ? "" : "; ") + f;
  }
  Proposal p;
  // The prediction when the change model has one ("fp8_e4m3 -> bf16 (significand 4 -> 8 bits)
  // should cut its error ~16x, taking ... to ~..."), else only the direction.
  const std::string effect = c.prediction.empty() ? fmt::format("{} -> {} ({}) should close the gap", c.from, c.value, c.why)
                                                  : fmt::format("{} ({})", c.prediction, c.why);
  p.hypothesis = fmt::format("{} explains {:.0f}% of `{}` ({}){}; {} {}", c.component, a ? 100 * a->share : 0.0,
                             state.evidence.condition, a ? a->evidence : "", findings.empty() ? "" : "; " + findings,
                             c.knob, effect);
  p.change = std::move(c);
  return std::optional<Proposal>(std::move(p));
}

}  // namespace recur::agent
