// Proposers: the loop's step 3 and 4 (hypothesis, candidate change). The loop gives a proposer
// the current configuration, the gate's state and the attribution Evidence; the proposer
// returns one change with its hypothesis, or nothing when it has no idea left. The loop, not
// the proposer, validates the change (the probe ladder) and keeps or reverts it.
//
// Built in: BuiltinProposer (builtin_proposer.h), general: it searches only through the
// attributed components and the knobs tagged with them. CommandProposer runs an external
// program per proposal (JSON on stdin and stdout), so other proposers (an LLM agent, a script)
// plug in without code here; OpenAIProposer (openai_proposer.h) asks an OpenAI-compatible chat
// endpoint. Both speak the protocol of proposer_protocol.h.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "loop/episode.h"
#include "loop/evidence.h"
#include "loop/gate_state.h"
#include "loop/proposal.h"
#include "loop/search_space.h"
#include "core/status.h"

namespace recur::agent {

// A lookahead (docs/agent.md, "Lookahead from a locally confirmed change"): the configuration
// includes a change the gate reverted although a lower rung confirmed it on its own component;
// the next change is judged with it, as a pair, against the gate before both.
struct Lookahead {
  std::string knob, from, value;  // the tentative change
  std::string licensed_by;        // the local evidence ("check: max_rel 0.0039 -> 2.3e-07")
  std::string alone;              // what the gate said of it alone ("1 failing (4.6) -> 1 failing (6.8)")
  std::string must_beat;          // the gate's score before both, which the pair must beat
};

struct AgentState {
  const Episode* episode = nullptr;
  std::map<std::string, std::string> config;  // the candidate arm's configuration now
  GateState gate;
  Evidence evidence;
  // Changes already tried from this configuration, and configurations already visited (a
  // change back to one of them is never proposed).
  std::set<std::string> tried;
  std::set<std::map<std::string, std::string>> visited;
  int iteration = 0;
  bool allow_patches = false;               // the run accepts "patch" actions (--allow-patches)
  const Feedback* last_feedback = nullptr;  // the latest experiment's record
  std::vector<std::string> rejected;        // why this iteration's earlier proposals were refused
  std::optional<Lookahead> lookahead;       // set while the loop explores one step from a reverted change
};

// The changes still open from this state, most promising first: for each attributed component,
// the untried single-knob changes of the knobs tagged with it (search_space.h), without fixed
// knobs, knobs the gate's workload did not read under the current configuration
// (GateState::live_knobs, when known) and changes back to a visited configuration, ranked by
// expected gain (candidate_rank.h: the component's measured share times the change model's
// prediction; a change predicted to break a holding condition last).
// Each candidate's `component` is the component that led to it. This is the built-in
// proposer's order, and what external proposers get as suggestions (`next`).
Result<std::vector<Candidate>> open_changes(const AgentState& state);

class Proposer {
 public:
  virtual ~Proposer() = default;
  virtual std::string name() const = 0;
  // The next change to try, or nullopt when there is none left.
  virtual Result<std::optional<Proposal>> propose(const AgentState& state) = 0;
  // Why the last propose() returned nullopt when that was not "nothing left" (a spent limit:
  // "proposer limit: 20 calls"); the loop ends the run with it. Empty otherwise.
  virtual std::string stop_reason() const { return {}; }
};

// Per-run limits of a proposer that costs something (OpenAIProposer); 0 = no limit. They count
// this process's calls: proposals a resumed run replays from the journal cost nothing.
struct ProposerLimits {
  int max_calls = 0;
  int64_t max_tokens = 0;  // prompt + completion, from the answers' usage (or estimated)
  double max_s = 0;        // seconds spent waiting for answers
};

struct ProposerOptions {
  ProposerLimits limits;
  std::string model;     // OpenAIProposer: the model id ("" = the endpoint's first /models entry)
  std::string log_path;  // OpenAIProposer: append each request and answer as a JSON line
};

// The configuration after a change.
std::map<std::string, std::string> apply_change(const std::map<std::string, std::string>& config, const Candidate& c);

}  // namespace recur::agent
