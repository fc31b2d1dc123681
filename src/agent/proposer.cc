// make_proposer, and CommandProposer: an external program proposes the change.
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
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/builtin_proposer.h"
#include "agent/candidate_rank.h"
#include "agent/openai_proposer.h"
#include "agent/proposer_protocol.h"
#include "agent/random_proposer.h"

namespace recur::agent {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class CommandProposer : public Proposer {
 public:
  explicit CommandProposer(std::string command) : command_(std::move(command)) {}
  std::string name() const override { return "cmd:" + command_; }

  Result<std::optional<Proposal>> propose(const AgentState& state) override {
    const fs::path dir = fs::temp_directory_path();
    const fs::path in = dir / fmt::format("recur-proposer-{}.in.json", ::getpid());
    const fs::path out = dir / fmt::format("recur-proposer-{}.out.json", ::getpid());
    {
      std::ofstream f(in);
      f << state_json(state).dump(2);
      if (!f) return io_error("proposer: cannot write {}", in.string());
    }
    const std::string line = fmt::format("{} < '{}' > '{}'", command_, in.string(), out.string());
    const int rc = std::system(line.c_str());
    std::ifstream f(out);
    std::stringstream text;
    text << f.rdbuf();
    fs::remove(in);
    fs::remove(out);
    if (rc != 0) return internal_error("proposer '{}' exited with status {}", command_, rc);
    json j = json::parse(text.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object())
      return invalid_argument("proposer '{}': stdout is not a JSON object: expected {{\"knob\", \"value\", \"hypothesis\"}} "
                         "or {{\"stop\": true}}, got '{}'",
                         command_, excerpt(text.str()));
    return parse_action(j, state, name());
  }

 private:
  std::string command_;
};

}  // namespace

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

Result<std::unique_ptr<Proposer>> make_proposer(std::string_view spec, const ProposerOptions& options) {
  const ProposerLimits& l = options.limits;
  const bool openai_options = l.max_calls > 0 || l.max_tokens > 0 || l.max_s > 0 || !options.model.empty() ||
                              !options.log_path.empty();
  if (openai_options && !spec.starts_with("openai:"))
    return invalid_argument("--proposer '{}': the --proposer-max-*, --proposer-model and --proposer-log options are "
                            "for openai:URL proposers",
                            spec);
  if (spec == "builtin") return std::unique_ptr<Proposer>(std::make_unique<BuiltinProposer>());
  if (spec == "random") return std::unique_ptr<Proposer>(std::make_unique<RandomProposer>(1));
  if (spec.starts_with("random:")) {
    const std::string_view digits = spec.substr(7);
    uint64_t seed = 0;
    const bool ok = !digits.empty() && digits.size() <= 19 &&
                    std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (!ok) return invalid_argument("--proposer '{}': expected random or random:SEED (SEED a non-negative integer)", spec);
    for (char c : digits) seed = seed * 10 + uint64_t(c - '0');
    return std::unique_ptr<Proposer>(std::make_unique<RandomProposer>(seed));
  }
  for (std::string_view prefix : {"cmd:", "command:"})
    if (spec.starts_with(prefix) && spec.size() > prefix.size())
      return std::unique_ptr<Proposer>(std::make_unique<CommandProposer>(std::string(spec.substr(prefix.size()))));
  if (spec.starts_with("openai:")) {
    RECUR_ASSIGN_OR_RETURN(std::unique_ptr<OpenAIProposer> p, OpenAIProposer::create(spec.substr(7), options));
    return std::unique_ptr<Proposer>(std::move(p));
  }
  return invalid_argument("--proposer '{}': expected builtin, random[:SEED] (the matched-budget baseline), cmd:PROGRAM (also command:PROGRAM) or openai:URL (an "
                          "OpenAI-compatible endpoint such as http://127.0.0.1:8000/v1; external proposers, "
                          "docs/agent.md)",
                          spec);
}

}  // namespace recur::agent
