// CommandProposer: an external program proposes the change.
//
// Protocol: for each proposal the program runs once (through /bin/sh) with the agent's state as
// one JSON document on stdin:
//   {"episode": {"name", "description"}, "iteration", "config": {knob: value},
//    "gate": {"outcome", "reason", "conditions": [{"text", "outcome", "details"}]},
//    "evidence": {"condition", "components": [{"component", "share", "evidence"}], "findings": [...]},
//    "next": [{"knob", "value", "from", "component", "why", "expected_gain", "prediction"}],
//            (open changes, by expected gain: docs/agent.md "Ranking")
//    "last_feedback": the latest experiment's Feedback record,
//    "tried": ["knob=value", ...], "rejected": [why earlier answers were refused], "fixed": [...],
//    "knobs": [{"name", "type", "choices", "default", "current", "components", "help"}]}
// and prints one JSON object on stdout, an action:
//   {"action": "set", "knobs": {K: V}, "hypothesis": H}   one knob per change
//   {"knob": K, "value": V, "hypothesis": H}             the same, short form
//   {"action": "stop", "why": W}  or  {"stop": true}
// Anything else (other actions, two knobs, unknown knobs or values, fixed knobs) is refused with
// the reason, which the loop feeds back in "rejected" on the next call.
#pragma once

#include <string>

#include "loop/proposer.h"

namespace recur::agent {

class CommandProposer : public Proposer {
 public:
  explicit CommandProposer(std::string command) : command_(std::move(command)) {}
  std::string name() const override { return "cmd:" + command_; }
  Result<std::optional<Proposal>> propose(const AgentState& state) override;

 private:
  std::string command_;
};

}  // namespace recur::agent
