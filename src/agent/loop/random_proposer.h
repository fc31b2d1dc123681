// The matched-budget baseline (`--proposer random[:SEED]`, docs/agent.md "Evaluating a
// proposer"): each proposal is a uniformly random single-knob change over the episode's search
// space, every registered knob but the fixed ones (an indexed family such as
// engine.kv_dtype.layer[] expands to one knob per layer of the gate's synthetic model). It reads
// no evidence. The loop validates and keeps or reverts its changes exactly as it does the
// built-in proposer's, under the same budget, so the two are compared on equal terms.
//
// Reproducible: the draw is a function of the seed and the state (iteration, changes tried,
// refusals), not of a generator's history, so a resumed run that replays some proposals from
// the journal draws the same later ones. Not thread-safe.
#pragma once

#include <cstdint>

#include "loop/proposer.h"

namespace recur::agent {

class RandomProposer : public Proposer {
 public:
  explicit RandomProposer(uint64_t seed = 1) : seed_(seed) {}
  std::string name() const override;
  Result<std::optional<Proposal>> propose(const AgentState& state) override;

 private:
  uint64_t seed_;
};

// Every untried single-knob change of the state's search space, grouped by knob in name order:
// what RandomProposer draws from (a knob first, uniformly, then one of its values).
Result<std::vector<std::vector<Candidate>>> random_search_space(const AgentState& state);

}  // namespace recur::agent
