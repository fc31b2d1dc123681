// The built-in proposer. For each attributed component, most responsible first, it proposes
// the first untried single-knob change among the knobs tagged with that component
// (search_space.h), skipping fixed knobs and changes that lead back to a visited
// configuration. Its hypothesis names the component, its share, the evidence and the change.
// It holds no episode knowledge: the order comes from attribution, then the registry.
#pragma once

#include "loop/proposer.h"

namespace recur::agent {

class BuiltinProposer : public Proposer {
 public:
  std::string name() const override { return "builtin"; }
  Result<std::optional<Proposal>> propose(const AgentState& state) override;
};

}  // namespace recur::agent
