// make_proposer, and CommandProposer: an external program proposes the change.
//
// Protocol: for each proposal the program runs once (through /bin/sh) with the agent's state as
// one JSON document on stdin:
//   {"episode": {"name", "description"}, "iteration", "config": {knob: value},
//    "gate": {"outcome", "reason", "conditions": [{"text", "outcome", "details"}]},
//    "evidence": {"condition", "components": [{"component", "share", "evidence"}], "findings": [...]},
//    "next": [{"knob", "value", "from", "component", "why"}],   (open changes, most promising first)
//    "last_feedback": the latest experiment's Feedback record,
//    "tried": ["knob=value", ...], "rejected": [why earlier answers were refused], "fixed": [...],
//    "knobs": [{"name", "type", "choices", "default", "current", "components", "help"}]}
// and prints one JSON object on stdout, an action:
//   {"action": "set", "knobs": {K: V}, "hypothesis": H}   one knob per change
//   {"knob": K, "value": V, "hypothesis": H}             the same, short form
//   {"action": "stop", "why": W}  or  {"stop": true}
// Anything else (other actions, two knobs, unknown knobs or values, fixed knobs) is refused with
// the reason, which the loop feeds back in "rejected" on the next call.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agent/builtin_proposer.h"
#include "gate/interval.h"

namespace recur::agent {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

json state_json(const AgentState& s) {
  json j;
  j["episode"] = {{"name", s.episode->name}, {"description", s.episode->description}};
  j["iteration"] = s.iteration;
  j["config"] = s.config;
  json conds = json::array();
  for (const gate::ConditionResult& c : s.gate.verdict.conditions)
    conds.push_back({{"text", c.text}, {"outcome", gate::outcome_name(c.outcome)}, {"details", c.details}});
  j["gate"] = {{"outcome", gate::outcome_name(s.gate.verdict.outcome)}, {"reason", s.gate.verdict.reason},
               {"conditions", conds}};
  json comps = json::array();
  for (const Attribution& a : s.evidence.components)
    comps.push_back({{"component", a.component}, {"share", a.share}, {"evidence", a.evidence}});
  j["evidence"] = {{"condition", s.evidence.condition}, {"components", comps}, {"findings", s.evidence.findings}};
  j["tried"] = s.tried;
  json next = json::array();
  if (auto open = open_changes(s)) {
    for (const Candidate& c : *open)
      next.push_back({{"knob", c.knob}, {"value", c.value}, {"from", c.from}, {"component", c.component}, {"why", c.why}});
  }
  j["next"] = next;
  j["last_feedback"] = s.last_feedback ? feedback_to_json(*s.last_feedback) : json(nullptr);
  j["rejected"] = s.rejected;
  j["fixed"] = s.episode->fixed;
  Config current;
  for (const auto& [k, v] : s.config) (void)current.set(k, v);
  json knobs = json::array();
  for (const KnobSpec* k : KnobRegistry::global().all()) {
    knobs.push_back({{"name", k->name}, {"type", knob_type_name(k->type)}, {"choices", k->choices},
                     {"default", k->default_value}, {"current", effective_value(current, *k)},
                     {"components", k->components}, {"help", k->help}});
  }
  j["knobs"] = knobs;
  return j;
}

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
                         command_, text.str().substr(0, 200));
    auto is = [&](const char* key, const json& want) { return j.contains(key) && j[key] == want; };
    if (is("stop", true) || is("action", "stop")) return std::optional<Proposal>();
    Proposal p;
    if (j.contains("action")) {
      if (!j["action"].is_string() || j["action"] != "set")
        return invalid_argument("proposer '{}': action {} is not supported: expected \"set\" or \"stop\"", command_,
                                j["action"].dump());
      if (!j.contains("knobs") || !j["knobs"].is_object() || j["knobs"].size() != 1 ||
          !j["knobs"].begin().value().is_string())
        return invalid_argument("proposer '{}': \"set\" needs \"knobs\": an object with exactly one knob and a string "
                                "value (one change per experiment)",
                                command_);
      p.change.knob = j["knobs"].begin().key();
      p.change.value = j["knobs"].begin().value();
    } else {
      for (const char* key : {"knob", "value"})
        if (!j.contains(key) || !j[key].is_string())
          return invalid_argument("proposer '{}': member '{}' must be a string, in {}", command_, key,
                                  text.str().substr(0, 200));
      p.change.knob = j["knob"];
      p.change.value = j["value"];
    }
    if (!j.contains("hypothesis") || !j["hypothesis"].is_string())
      return invalid_argument("proposer '{}': member 'hypothesis' must be a string", command_);
    p.hypothesis = j["hypothesis"];
    const KnobSpec* k = KnobRegistry::global().find(p.change.knob);
    if (k == nullptr) return invalid_argument("proposer '{}': unknown knob '{}'", command_, p.change.knob);
    if (Status s = k->check(p.change.value); !s)
      return invalid_argument("proposer '{}': {}={}: {}", command_, p.change.knob, p.change.value, s.error().message());
    for (const std::string& fixed : state.episode->fixed)
      if (fixed == p.change.knob) return invalid_argument("proposer '{}': knob {} is fixed by the episode", command_, fixed);
    Config current;
    for (const auto& [kk, v] : state.config) RECUR_RETURN_IF_ERROR(current.set(kk, v));
    p.change.from = effective_value(current, *k);
    if (p.change.from == p.change.value)
      return invalid_argument("proposer '{}': {} is already {}: a change must change something", command_, p.change.knob,
                              p.change.value);
    if (state.tried.count(p.change.key()))
      return invalid_argument("proposer '{}': {} was already tried from this configuration", command_, p.change.key());
    p.change.component = k->components.empty() ? "" : k->components.front();
    p.change.why = "proposed by " + name();
    return std::optional<Proposal>(std::move(p));
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
      if (!seen.insert(c.key()).second) continue;
      out.push_back(std::move(c));
    }
  }
  return out;
}

std::map<std::string, std::string> apply_change(const std::map<std::string, std::string>& config, const Candidate& c) {
  auto next = config;
  next[c.knob] = c.value;
  return next;
}

Result<std::unique_ptr<Proposer>> make_proposer(std::string_view spec) {
  if (spec == "builtin") return std::unique_ptr<Proposer>(std::make_unique<BuiltinProposer>());
  for (std::string_view prefix : {"cmd:", "command:"})
    if (spec.starts_with(prefix) && spec.size() > prefix.size())
      return std::unique_ptr<Proposer>(std::make_unique<CommandProposer>(std::string(spec.substr(prefix.size()))));
  return invalid_argument("--proposer '{}': expected builtin or cmd:PROGRAM (also command:PROGRAM; an external "
                          "proposer, docs/agent.md)",
                          spec);
}

}  // namespace recur::agent
