#include "core/feedback.h"

#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace recur {
namespace {

using nlohmann::json;

constexpr std::pair<Verdict, std::string_view> kVerdictNames[] = {
    {Verdict::kConfirmed, "confirmed"},
    {Verdict::kRefuted, "refuted"},
    {Verdict::kInconclusive, "inconclusive"},
    {Verdict::kFailed, "failed"},
};

// Field readers: each error names the path ("metrics[1].value") and what was expected.
Result<const json*> field(const json& obj, std::string_view path, const char* key, bool required) {
  auto it = obj.find(key);
  if (it == obj.end()) {
    if (required) return parse_error("feedback: {}{}: missing", path, key);
    return static_cast<const json*>(nullptr);
  }
  return &*it;
}

Result<std::string> read_string(const json& obj, std::string_view path, const char* key, bool required) {
  RECUR_ASSIGN_OR_RETURN(const json* v, field(obj, path, key, required));
  if (v == nullptr) return std::string();
  if (!v->is_string()) return parse_error("feedback: {}{}: expected a string, got {}", path, key, v->type_name());
  return v->get<std::string>();
}

Result<double> read_number(const json& obj, std::string_view path, const char* key, bool required) {
  RECUR_ASSIGN_OR_RETURN(const json* v, field(obj, path, key, required));
  if (v == nullptr) return 0.0;
  if (!v->is_number()) return parse_error("feedback: {}{}: expected a number, got {}", path, key, v->type_name());
  return v->get<double>();
}

Result<std::vector<std::string>> read_strings(const json& obj, std::string_view path, const char* key) {
  std::vector<std::string> out;
  RECUR_ASSIGN_OR_RETURN(const json* v, field(obj, path, key, false));
  if (v == nullptr) return out;
  if (!v->is_array()) return parse_error("feedback: {}{}: expected an array, got {}", path, key, v->type_name());
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_string()) return parse_error("feedback: {}{}[{}]: expected a string", path, key, i);
    out.push_back((*v)[i].get<std::string>());
  }
  return out;
}

Result<const json*> read_array(const json& obj, const char* key) {
  RECUR_ASSIGN_OR_RETURN(const json* v, field(obj, "", key, false));
  if (v != nullptr && !v->is_array()) return parse_error("feedback: {}: expected an array, got {}", key, v->type_name());
  return v;
}

std::string format_value(double v) {
  if (v == 0) return "0";
  double a = std::fabs(v);
  if (a < 1e15 && v == std::floor(v) && a >= 1) return fmt::format("{}", int64_t(v));
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.3g}", v);
  if (a >= 100) return fmt::format("{:.1f}", v);
  return fmt::format("{:.4g}", v);
}

}  // namespace

std::string_view verdict_name(Verdict v) {
  for (const auto& [verdict, name] : kVerdictNames)
    if (verdict == v) return name;
  return "?";
}

std::optional<Verdict> parse_verdict(std::string_view name) {
  for (const auto& [verdict, n] : kVerdictNames)
    if (n == name) return verdict;
  return std::nullopt;
}

Metric& Feedback::add_metric(std::string name, double value, std::string unit) {
  metrics.push_back(Metric{std::move(name), value, std::nullopt, std::move(unit)});
  return metrics.back();
}

const Metric* Feedback::find_metric(std::string_view name) const {
  for (const Metric& m : metrics)
    if (m.name == name) return &m;
  return nullptr;
}

Status validate_feedback(const Feedback& f) {
  if (f.probe.empty()) return invalid_argument("feedback: probe: empty");
  if (!f.action.empty() && !json::parse(f.action, nullptr, /*allow_exceptions=*/false).is_object())
    return invalid_argument("feedback: action: not a JSON object");
  if (f.tier < 0 || f.tier > 4) return invalid_argument("feedback: tier: {} is outside 0..4", f.tier);
  if (!(f.cost_s >= 0) || !std::isfinite(f.cost_s))
    return invalid_argument("feedback: cost_s: {} is not a finite non-negative number", f.cost_s);
  for (size_t i = 0; i < f.metrics.size(); ++i) {
    const Metric& m = f.metrics[i];
    if (m.name.empty()) return invalid_argument("feedback: metrics[{}].name: empty", i);
    if (!std::isfinite(m.value)) return invalid_argument("feedback: metrics[{}] ({}): value {} is not finite", i, m.name, m.value);
    if (m.ci95) {
      auto [lo, hi] = *m.ci95;
      if (!std::isfinite(lo) || !std::isfinite(hi) || lo > hi)
        return invalid_argument("feedback: metrics[{}] ({}): ci95 [{}, {}] is not a finite interval", i, m.name, lo, hi);
    }
  }
  double sum = 0;
  bool has_remainder = false;
  for (size_t i = 0; i < f.attribution.size(); ++i) {
    const Attribution& a = f.attribution[i];
    if (a.component.empty()) return invalid_argument("feedback: attribution[{}].component: empty", i);
    if (!(a.share >= 0 && a.share <= 1))
      return invalid_argument("feedback: attribution[{}].share: {} is outside [0, 1]", i, a.share);
    sum += a.share;
    has_remainder |= a.component == kUnattributed;
  }
  if (f.attribution_is_decomposition && !f.attribution.empty()) {
    if (!has_remainder)
      return invalid_argument("feedback: attribution: a decomposition needs an explicit '{}' entry (share 0 if none)",
                              kUnattributed);
    if (std::fabs(sum - 1.0) > 1e-6)
      return invalid_argument("feedback: attribution: decomposition shares sum to {:.6f}, not 1", sum);
  }
  return ok_status();
}

nlohmann::json feedback_to_json(const Feedback& f) {
  json j = {{"probe", f.probe}, {"tier", f.tier}, {"cost_s", f.cost_s}, {"subject", f.subject},
            {"hypothesis", f.hypothesis}, {"verdict", std::string(verdict_name(f.verdict))}};
  json metrics = json::array();
  for (const Metric& m : f.metrics) {
    json jm = {{"name", m.name}, {"value", m.value}};
    if (m.ci95) jm["ci95"] = {m.ci95->first, m.ci95->second};
    if (!m.unit.empty()) jm["unit"] = m.unit;
    metrics.push_back(std::move(jm));
  }
  j["metrics"] = std::move(metrics);
  json attribution = json::array();
  for (const Attribution& a : f.attribution)
    attribution.push_back({{"component", a.component}, {"share", a.share}, {"evidence", a.evidence}});
  j["attribution"] = std::move(attribution);
  if (f.attribution_is_decomposition) j["attribution_is_decomposition"] = true;
  j["notes"] = f.notes;
  j["next"] = f.next;
  j["artifacts"] = f.artifacts;
  if (!f.action.empty()) {
    json a = json::parse(f.action, nullptr, /*allow_exceptions=*/false);
    j["action"] = a.is_object() ? a : json(f.action);  // validate_feedback refuses the latter
  }
  return j;
}

Result<Feedback> feedback_from_json(const json& j) {
  if (!j.is_object()) return parse_error("feedback: expected a JSON object, got {}", j.type_name());
  Feedback f;
  RECUR_ASSIGN_OR_RETURN(f.probe, read_string(j, "", "probe", true));
  RECUR_ASSIGN_OR_RETURN(double tier, read_number(j, "", "tier", true));
  if (tier != std::floor(tier)) return parse_error("feedback: tier: expected an integer, got {}", tier);
  f.tier = int(tier);
  RECUR_ASSIGN_OR_RETURN(f.cost_s, read_number(j, "", "cost_s", true));
  RECUR_ASSIGN_OR_RETURN(f.subject, read_string(j, "", "subject", false));
  RECUR_ASSIGN_OR_RETURN(f.hypothesis, read_string(j, "", "hypothesis", false));
  RECUR_ASSIGN_OR_RETURN(std::string verdict, read_string(j, "", "verdict", true));
  auto v = parse_verdict(verdict);
  if (!v) return parse_error("feedback: verdict: '{}' is not one of confirmed, refuted, inconclusive, failed", verdict);
  f.verdict = *v;

  RECUR_ASSIGN_OR_RETURN(const json* metrics, read_array(j, "metrics"));
  for (size_t i = 0; metrics && i < metrics->size(); ++i) {
    const json& jm = (*metrics)[i];
    std::string path = fmt::format("metrics[{}].", i);
    if (!jm.is_object()) return parse_error("feedback: metrics[{}]: expected an object", i);
    Metric m;
    RECUR_ASSIGN_OR_RETURN(m.name, read_string(jm, path, "name", true));
    RECUR_ASSIGN_OR_RETURN(m.value, read_number(jm, path, "value", true));
    RECUR_ASSIGN_OR_RETURN(m.unit, read_string(jm, path, "unit", false));
    RECUR_ASSIGN_OR_RETURN(const json* ci, field(jm, path, "ci95", false));
    if (ci != nullptr) {
      if (!ci->is_array() || ci->size() != 2 || !(*ci)[0].is_number() || !(*ci)[1].is_number())
        return parse_error("feedback: {}ci95: expected [lo, hi]", path);
      m.ci95 = std::pair((*ci)[0].get<double>(), (*ci)[1].get<double>());
    }
    f.metrics.push_back(std::move(m));
  }
  RECUR_ASSIGN_OR_RETURN(const json* attribution, read_array(j, "attribution"));
  for (size_t i = 0; attribution && i < attribution->size(); ++i) {
    const json& ja = (*attribution)[i];
    std::string path = fmt::format("attribution[{}].", i);
    if (!ja.is_object()) return parse_error("feedback: attribution[{}]: expected an object", i);
    Attribution a;
    RECUR_ASSIGN_OR_RETURN(a.component, read_string(ja, path, "component", true));
    RECUR_ASSIGN_OR_RETURN(a.share, read_number(ja, path, "share", true));
    RECUR_ASSIGN_OR_RETURN(a.evidence, read_string(ja, path, "evidence", false));
    f.attribution.push_back(std::move(a));
  }
  if (auto it = j.find("attribution_is_decomposition"); it != j.end()) {
    if (!it->is_boolean()) return parse_error("feedback: attribution_is_decomposition: expected a boolean");
    f.attribution_is_decomposition = it->get<bool>();
  }
  RECUR_ASSIGN_OR_RETURN(f.notes, read_strings(j, "", "notes"));
  RECUR_ASSIGN_OR_RETURN(f.next, read_strings(j, "", "next"));
  RECUR_ASSIGN_OR_RETURN(const json* artifacts, field(j, "", "artifacts", false));
  if (artifacts != nullptr) {
    if (!artifacts->is_object()) return parse_error("feedback: artifacts: expected an object");
    for (const auto& [key, value] : artifacts->items()) {
      if (!value.is_string()) return parse_error("feedback: artifacts.{}: expected a string", key);
      f.artifacts[key] = value.get<std::string>();
    }
  }
  if (auto it = j.find("action"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return parse_error("feedback: action: expected an object, got {}", it->type_name());
    f.action = it->dump();
  }
  return f;
}

Result<Feedback> feedback_from_json_text(std::string_view text) {
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return parse_error("feedback: not valid JSON");
  return feedback_from_json(j);
}

std::string render_feedback(const Feedback& f) {
  std::string out = fmt::format("{} (tier {}, {:.2f} s)  {}\n", f.probe, f.tier, f.cost_s, f.subject);
  if (!f.hypothesis.empty()) out += fmt::format("  hypothesis  {}\n", f.hypothesis);
  out += fmt::format("  verdict     {}\n", verdict_name(f.verdict));
  for (const Metric& m : f.metrics) {
    std::string unit = m.unit.empty() ? "" : " " + m.unit;
    std::string ci = m.ci95 ? fmt::format("  [{}, {}]", format_value(m.ci95->first), format_value(m.ci95->second)) : "";
    out += fmt::format("  {:<22} {}{}{}\n", m.name, format_value(m.value), unit, ci);
  }
  if (!f.attribution.empty()) out += "  attribution\n";
  for (const Attribution& a : f.attribution)
    out += fmt::format("    {:5.1f}%  {:<36} {}\n", 100 * a.share, a.component, a.evidence);
  for (const std::string& n : f.notes) out += fmt::format("  note: {}\n", n);
  for (const std::string& n : f.next) out += fmt::format("  next: {}\n", n);
  for (const auto& [k, v] : f.artifacts) out += fmt::format("  {}: {}\n", k, v);
  return out;
}

}  // namespace recur
