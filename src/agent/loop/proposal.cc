#include "loop/proposal.h"

#include <fmt/format.h>

namespace recur::agent {

namespace {

using json = nlohmann::json;

Result<std::string> string_member(const json& j, std::string_view path, const char* key, bool required) {
  if (!j.contains(key)) {
    if (required) return invalid_argument("{}.{}: missing (expected a string)", path, key);
    return std::string();
  }
  if (!j[key].is_string()) return invalid_argument("{}.{}: expected a string, got {}", path, key, j[key].type_name());
  return j[key].get<std::string>();
}

json shape_json(const kernels::Shape& s) {
  json o = json::object();
  for (const auto& [name, value] : s.params()) o[name] = value;
  return o;
}

// The shape object back in the kernel's declaration order, checked as a parsed shape is.
Result<kernels::Shape> shape_from_json(const json& j, const std::string& kernel, std::string_view path) {
  const kernels::KernelSpec* spec = kernels::KernelRegistry::global().find(kernel);
  if (spec == nullptr) return invalid_argument("{}: a shape needs a registered kernel, got '{}'", path, kernel);
  if (!j.is_object()) return invalid_argument("{}: expected an object of shape parameters, got {}", path, j.type_name());
  kernels::Shape s = spec->default_shape();
  for (const auto& [name, value] : j.items()) {
    if (!value.is_number_integer())
      return invalid_argument("{}.{}: expected an integer, got {}", path, name, value.type_name());
    if (!s.find(name)) return invalid_argument("{}.{}: kernel {} has no such shape parameter", path, name, kernel);
    s.set(name, value.get<int64_t>());
  }
  if (Status st = spec->validate_shape(s); !st) return invalid_argument("{}: {}", path, st.error().message());
  return s;
}

}  // namespace

std::string_view action_kind_name(ActionKind k) {
  switch (k) {
    case ActionKind::kSet: return "set";
    case ActionKind::kPatch: return "patch";
    case ActionKind::kProbe: return "probe";
  }
  return "?";
}

std::string_view probe_kind_name(ProbeKind k) { return k == ProbeKind::kCheck ? "check" : "bench"; }

Result<kernels::Shape> parse_kernel_shape(std::string_view kernel, std::string_view text) {
  const kernels::KernelSpec* spec = kernels::KernelRegistry::global().find(kernel);
  if (spec == nullptr) return invalid_argument("shape '{}': unknown kernel '{}' (recur kernels lists them)", text, kernel);
  auto s = spec->parse_shape(text);
  if (!s) return invalid_argument("shape '{}' of kernel {}: {}", text, kernel, s.error().message());
  return s;
}

std::string describe_proposal(const Proposal& p) {
  const KernelRequest& t = p.target;
  std::string target = t.kernel;
  if (!t.variant.empty()) target += " variant " + t.variant;
  if (!t.vs.empty()) target += " vs " + t.vs;
  if (t.shape) target += " shape " + t.shape->to_string();
  switch (p.kind) {
    case ActionKind::kSet:
      return fmt::format("set {}={}{}", p.change.knob, p.change.value,
                         p.change.from.empty() ? "" : fmt::format(" (from {})", p.change.from));
    case ActionKind::kPatch: return target.empty() ? "patch" : fmt::format("patch (kernel {})", target);
    case ActionKind::kProbe: return fmt::format("probe {} {}", probe_kind_name(p.probe), target);
  }
  return "?";
}

json proposal_to_json(const Proposal& p) {
  json j = {{"kind", action_kind_name(p.kind)}, {"hypothesis", p.hypothesis}};
  switch (p.kind) {
    case ActionKind::kSet:
      j["change"] = {{"knob", p.change.knob},           {"value", p.change.value},
                     {"from", p.change.from},           {"component", p.change.component},
                     {"why", p.change.why},             {"expected_gain", p.change.expected_gain},
                     {"prediction", p.change.prediction}};
      return j;
    case ActionKind::kPatch: j["patch"] = p.patch; break;
    case ActionKind::kProbe: j["probe"] = probe_kind_name(p.probe); break;
  }
  json t = {{"kernel", p.target.kernel}, {"variant", p.target.variant}, {"vs", p.target.vs}};
  if (p.target.shape) t["shape"] = shape_json(*p.target.shape);
  if (p.target.budget_s) t["budget_s"] = *p.target.budget_s;
  j["target"] = std::move(t);
  return j;
}

Result<Proposal> proposal_from_json(const json& j) {
  if (!j.is_object()) return invalid_argument("action: expected an object, got {}", j.type_name());
  Proposal p;
  RECUR_ASSIGN_OR_RETURN(const std::string kind, string_member(j, "action", "kind", true));
  if (kind == "set") p.kind = ActionKind::kSet;
  else if (kind == "patch") p.kind = ActionKind::kPatch;
  else if (kind == "probe") p.kind = ActionKind::kProbe;
  else return invalid_argument("action.kind: expected \"set\", \"patch\" or \"probe\", got '{}'", kind);
  RECUR_ASSIGN_OR_RETURN(p.hypothesis, string_member(j, "action", "hypothesis", false));
  if (p.kind == ActionKind::kSet) {
    if (!j.contains("change") || !j["change"].is_object()) return invalid_argument("action.change: expected an object");
    const json& c = j["change"];
    RECUR_ASSIGN_OR_RETURN(p.change.knob, string_member(c, "action.change", "knob", true));
    RECUR_ASSIGN_OR_RETURN(p.change.value, string_member(c, "action.change", "value", true));
    RECUR_ASSIGN_OR_RETURN(p.change.from, string_member(c, "action.change", "from", false));
    RECUR_ASSIGN_OR_RETURN(p.change.component, string_member(c, "action.change", "component", false));
    RECUR_ASSIGN_OR_RETURN(p.change.why, string_member(c, "action.change", "why", false));
    RECUR_ASSIGN_OR_RETURN(p.change.prediction, string_member(c, "action.change", "prediction", false));
    if (c.contains("expected_gain")) {
      if (!c["expected_gain"].is_number()) return invalid_argument("action.change.expected_gain: expected a number");
      p.change.expected_gain = c["expected_gain"].get<double>();
    }
    if (p.change.knob.empty()) return invalid_argument("action.change.knob: empty");
    return p;
  }
  if (p.kind == ActionKind::kPatch) {
    RECUR_ASSIGN_OR_RETURN(p.patch, string_member(j, "action", "patch", true));
  } else {
    RECUR_ASSIGN_OR_RETURN(const std::string probe, string_member(j, "action", "probe", true));
    if (probe != "check" && probe != "bench")
      return invalid_argument("action.probe: expected \"check\" or \"bench\", got '{}'", probe);
    p.probe = probe == "check" ? ProbeKind::kCheck : ProbeKind::kBench;
  }
  const json t = j.value("target", json::object());
  if (!t.is_object()) return invalid_argument("action.target: expected an object");
  RECUR_ASSIGN_OR_RETURN(p.target.kernel, string_member(t, "action.target", "kernel", p.kind == ActionKind::kProbe));
  RECUR_ASSIGN_OR_RETURN(p.target.variant, string_member(t, "action.target", "variant", false));
  RECUR_ASSIGN_OR_RETURN(p.target.vs, string_member(t, "action.target", "vs", false));
  if (t.contains("shape")) {
    RECUR_ASSIGN_OR_RETURN(p.target.shape, shape_from_json(t["shape"], p.target.kernel, "action.target.shape"));
  }
  if (t.contains("budget_s")) {
    if (!t["budget_s"].is_number() || !(t["budget_s"].get<double>() > 0))
      return invalid_argument("action.target.budget_s: expected a positive number of seconds");
    p.target.budget_s = t["budget_s"].get<double>();
  }
  return p;
}

}  // namespace recur::agent
