#include "loop/proposer_protocol.h"

#include "loop/component_knobs.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "gate/interval.h"
#include "kernels/registry.h"

namespace recur::agent {

namespace {

using nlohmann::json;

constexpr size_t kMaxString = 240;  // characters of one string in the compact state
constexpr size_t kMaxList = 12;     // items of one list in the compact state

// Cuts long strings and lists everywhere in `j`, saying how much was cut.
json compacted(const json& j) {
  if (j.is_string()) {
    const std::string& s = j.get_ref<const std::string&>();
    if (s.size() <= kMaxString) return j;
    return fmt::format("{} ({} bytes in all)", excerpt(s, kMaxString), s.size());
  }
  if (j.is_array()) {
    json out = json::array();
    for (size_t i = 0; i < j.size() && i < kMaxList; ++i) out.push_back(compacted(j[i]));
    if (j.size() > kMaxList) out.push_back(fmt::format("... {} more", j.size() - kMaxList));
    return out;
  }
  if (j.is_object()) {
    json out = json::object();
    for (const auto& [k, v] : j.items()) out[k] = compacted(v);
    return out;
  }
  return j;
}

bool knob_is_relevant(const json& knob, const AgentState& s, const std::set<std::string>& suggested) {
  if (suggested.count(knob["name"].get<std::string>())) return true;
  for (const Attribution& a : s.evidence.components)
    for (const json& tag : knob["components"])
      if (component_matches(tag.get<std::string>(), a.component)) return true;
  return false;
}

// The end of the balanced object that starts at `text[open]`, or npos.
size_t object_end(std::string_view text, size_t open) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = open; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      ++depth;
    } else if (c == '}' && --depth == 0) {
      return i;
    }
  }
  return std::string_view::npos;
}

constexpr size_t kMaxPatchBytes = size_t{256} << 10;

// An optional string member that becomes one word of a command line (a kernel, variant, shape).
Status take_word(const json& j, const char* key, std::string_view who, std::string& out) {
  if (!j.contains(key)) return ok_status();
  const json& v = j[key];
  if (!v.is_string() || v.get_ref<const std::string&>().empty() || v.get_ref<const std::string&>().size() > 100 ||
      v.get_ref<const std::string&>().find_first_of(" \t\n'\"") != std::string::npos ||
      v.get_ref<const std::string&>().front() == '-')
    return invalid_argument("proposer '{}': member '{}' must be one word (no spaces or quotes, no leading '-'), got {}",
                            who, key, excerpt(v.dump()));
  out = v.get<std::string>();
  return ok_status();
}

Result<std::optional<Proposal>> parse_patch_action(const json& j, const AgentState& state, std::string_view who) {
  if (!state.allow_patches)
    return invalid_argument("proposer '{}': action \"patch\" is not allowed in this run (code changes need "
                            "`recur agent run --allow-patches`); propose a knob change instead",
                            who);
  Proposal p;
  p.kind = ActionKind::kPatch;
  if (!j.contains("patch") || !j["patch"].is_string() || j["patch"].get_ref<const std::string&>().empty())
    return invalid_argument("proposer '{}': \"patch\" needs member 'patch': a unified diff (as `git diff` writes it)",
                            who);
  p.patch = j["patch"];
  if (p.patch.size() > kMaxPatchBytes)
    return invalid_argument("proposer '{}': the patch has {} bytes, more than the {} allowed", who, p.patch.size(),
                            kMaxPatchBytes);
  if (!p.patch.starts_with("diff ") && !p.patch.starts_with("--- ") && p.patch.find("\n--- ") == std::string::npos)
    return invalid_argument("proposer '{}': member 'patch' is not a unified diff (no '--- a/FILE' line): '{}'", who,
                            excerpt(p.patch, 120));
  if (!j.contains("hypothesis") || !j["hypothesis"].is_string())
    return invalid_argument("proposer '{}': member 'hypothesis' must be a string", who);
  p.hypothesis = j["hypothesis"];
  std::string shape;
  RECUR_RETURN_IF_ERROR(take_word(j, "kernel", who, p.target.kernel));
  RECUR_RETURN_IF_ERROR(take_word(j, "variant", who, p.target.variant));
  RECUR_RETURN_IF_ERROR(take_word(j, "shape", who, shape));
  if (!shape.empty()) {
    auto s = parse_kernel_shape(p.target.kernel, shape);
    if (!s) return invalid_argument("proposer '{}': {}", who, s.error().message());
    p.target.shape = std::move(*s);
  }
  return std::optional<Proposal>(std::move(p));
}

Result<std::optional<Proposal>> parse_probe_action(const json& j, std::string_view who) {
  Proposal p;
  p.kind = ActionKind::kProbe;
  if (!j.contains("probe") || !j["probe"].is_string() || (j["probe"] != "check" && j["probe"] != "bench"))
    return invalid_argument("proposer '{}': \"probe\" needs member 'probe': \"check\" or \"bench\" (read-only kernel "
                            "probes), got {}",
                            who, excerpt(j.value("probe", json()).dump()));
  p.probe = j["probe"] == "check" ? ProbeKind::kCheck : ProbeKind::kBench;
  const json args = j.value("args", json::object());
  if (!args.is_object() || !args.contains("kernel"))
    return invalid_argument("proposer '{}': \"probe\" needs 'args' with 'kernel' (and optionally variant, vs, shape, "
                            "budget_s)",
                            who);
  std::string shape;
  RECUR_RETURN_IF_ERROR(take_word(args, "kernel", who, p.target.kernel));
  RECUR_RETURN_IF_ERROR(take_word(args, "variant", who, p.target.variant));
  RECUR_RETURN_IF_ERROR(take_word(args, "vs", who, p.target.vs));
  RECUR_RETURN_IF_ERROR(take_word(args, "shape", who, shape));
  if (kernels::KernelRegistry::global().find(p.target.kernel) == nullptr)
    return invalid_argument("proposer '{}': unknown kernel '{}' (recur kernels lists them)", who, p.target.kernel);
  if (!shape.empty()) {
    auto s = parse_kernel_shape(p.target.kernel, shape);
    if (!s) return invalid_argument("proposer '{}': {}", who, s.error().message());
    p.target.shape = std::move(*s);
  }
  if (args.contains("budget_s")) {
    if (!args["budget_s"].is_number() || !(args["budget_s"].get<double>() > 0) || args["budget_s"].get<double>() > 30)
      return invalid_argument("proposer '{}': args.budget_s must be a number of seconds in (0, 30]", who);
    p.target.budget_s = args["budget_s"].get<double>();
  }
  p.hypothesis = j.contains("hypothesis") && j["hypothesis"].is_string()
                     ? j["hypothesis"].get<std::string>()
                     : fmt::format("{} of {} answers the proposer's question", probe_kind_name(p.probe), p.target.kernel);
  return std::optional<Proposal>(std::move(p));
}

}  // namespace

std::string excerpt(std::string_view text, size_t max_bytes) {
  // nlohmann's dump replaces invalid UTF-8 with U+FFFD; the round trip gives valid text.
  std::string valid =
      json::parse(json(std::string(text)).dump(-1, ' ', false, json::error_handler_t::replace)).get<std::string>();
  if (valid.size() <= max_bytes) return valid;
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(valid[cut]) & 0xC0) == 0x80) --cut;  // not inside a character
  valid.resize(cut);
  return valid + "...";
}

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
      next.push_back({{"knob", c.knob},
                      {"value", c.value},
                      {"from", c.from},
                      {"component", c.component},
                      {"why", c.why},
                      {"expected_gain", c.expected_gain},
                      {"prediction", c.prediction}});
  }
  j["next"] = next;
  j["last_feedback"] = s.last_feedback ? feedback_to_json(*s.last_feedback) : json(nullptr);
  j["actions"] = s.allow_patches ? json{"set", "patch", "probe", "stop"} : json{"set", "probe", "stop"};
  // Where no knob acts: the honest finding, and for a patch-capable run the request for a patch.
  j["knobless"] = knobless_components(s.evidence);
  if (s.allow_patches)
    if (std::string request = patch_request(s.evidence); !request.empty()) j["patch_request"] = std::move(request);
  j["rejected"] = s.rejected;
  // A lookahead: `config` includes a change the gate reverted alone; the answer is its partner.
  if (s.lookahead)
    j["lookahead"] = {{"tentative", {{"knob", s.lookahead->knob}, {"from", s.lookahead->from}, {"value", s.lookahead->value}}},
                      {"licensed_by", s.lookahead->licensed_by},
                      {"alone", s.lookahead->alone},
                      {"must_beat", s.lookahead->must_beat},
                      {"rule", "config includes the tentative change; the change you propose is kept with it, as a "
                               "pair, only when the gate is strictly closer than must_beat (the score before both)"}};
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

json compact_state_json(const AgentState& s) {
  json j = state_json(s);
  std::set<std::string> suggested;
  for (const json& c : j["next"]) suggested.insert(c["knob"].get<std::string>());
  json knobs = json::array();
  for (json& k : j["knobs"]) {
    if (!knob_is_relevant(k, s, suggested)) continue;
    k.erase("default");
    knobs.push_back(std::move(k));
  }
  j["knobs"] = std::move(knobs);
  if (j["last_feedback"].is_object()) j["last_feedback"].erase("artifacts");
  return compacted(j);
}

Result<json> first_json_object(std::string_view text) {
  for (size_t open = text.find('{'); open != std::string_view::npos; open = text.find('{', open + 1)) {
    const size_t end = object_end(text, open);
    if (end == std::string_view::npos) break;
    json j = json::parse(text.substr(open, end - open + 1), nullptr, false);
    if (!j.is_discarded() && j.is_object()) return j;
  }
  return invalid_argument("no JSON object in the answer: expected {{\"action\": \"set\", \"knobs\": {{K: V}}, "
                          "\"hypothesis\": H}} or {{\"action\": \"stop\"}}, got '{}'",
                          excerpt(text));
}

Result<std::optional<Proposal>> parse_action(const json& j, const AgentState& state, std::string_view who) {
  auto is = [&](const char* key, const json& want) { return j.contains(key) && j[key] == want; };
  if (is("stop", true) || is("action", "stop")) return std::optional<Proposal>();
  if (is("action", "patch")) return parse_patch_action(j, state, who);
  if (is("action", "probe")) return parse_probe_action(j, who);
  Proposal p;
  if (j.contains("action")) {
    if (!j["action"].is_string() || j["action"] != "set")
      return invalid_argument("proposer '{}': action {} is not supported: expected \"set\", \"patch\", \"probe\" or "
                              "\"stop\"",
                              who, excerpt(j["action"].dump()));
    if (!j.contains("knobs") || !j["knobs"].is_object() || j["knobs"].size() != 1 ||
        !j["knobs"].begin().value().is_string())
      return invalid_argument("proposer '{}': \"set\" needs \"knobs\": an object with exactly one knob and a string "
                              "value (one change per experiment)",
                              who);
    p.change.knob = j["knobs"].begin().key();
    p.change.value = j["knobs"].begin().value();
  } else {
    for (const char* key : {"knob", "value"})
      if (!j.contains(key) || !j[key].is_string())
        return invalid_argument("proposer '{}': member '{}' must be a string, in {}", who, key, excerpt(j.dump()));
    p.change.knob = j["knob"];
    p.change.value = j["value"];
  }
  if (!j.contains("hypothesis") || !j["hypothesis"].is_string())
    return invalid_argument("proposer '{}': member 'hypothesis' must be a string", who);
  p.hypothesis = j["hypothesis"];
  const KnobSpec* k = KnobRegistry::global().find(p.change.knob);
  if (k == nullptr) return invalid_argument("proposer '{}': unknown knob '{}'", who, p.change.knob);
  if (Status s = k->check(p.change.value); !s)
    return invalid_argument("proposer '{}': {}={}: {}", who, p.change.knob, p.change.value, s.error().message());
  for (const std::string& fixed : state.episode->fixed)
    if (fixed == p.change.knob) return invalid_argument("proposer '{}': knob {} is fixed by the episode", who, fixed);
  Config current;
  for (const auto& [kk, v] : state.config) RECUR_RETURN_IF_ERROR(current.set(kk, v));
  p.change.from = effective_value(current, *k);
  if (p.change.from == p.change.value)
    return invalid_argument("proposer '{}': {} is already {}: a change must change something", who, p.change.knob,
                            p.change.value);
  if (state.tried.count(p.change.key()))
    return invalid_argument("proposer '{}': {} was already tried from this configuration", who, p.change.key());
  p.change.component = k->components.empty() ? "" : k->components.front();
  p.change.why = fmt::format("proposed by {}", who);
  return std::optional<Proposal>(std::move(p));
}

}  // namespace recur::agent
