#include "loop/summary.h"

#include <nlohmann/json.hpp>

#include "loop/proposal.h"

#include <fmt/format.h>

namespace recur::agent {

namespace {

std::string shorten(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 3) + "..."; }

std::string metric_short(const Metric& m) {
  if (m.ci95) return fmt::format("{} {:.4g} [{:.4g}, {:.4g}]{}", m.name, m.value, m.ci95->first, m.ci95->second,
                                 m.unit.empty() ? "" : " " + m.unit);
  return fmt::format("{} {:.4g}{}", m.name, m.value, m.unit.empty() ? "" : " " + m.unit);
}

}  // namespace

std::string result_line(const Feedback& f) {
  std::string line(verdict_name(f.verdict));
  // A proposal: what it asks for (its own field, agent/proposal.h).
  if (!f.action.empty())
    if (auto p = proposal_from_json(nlohmann::json::parse(f.action, nullptr, /*allow_exceptions=*/false)))
      return line + ": " + describe_proposal(*p);
  for (const char* name : {"ratio", "max_rel", "max_rel_ratio", "time_us", "knobs_differing"}) {
    if (const Metric* m = f.find_metric(name)) return line + ": " + metric_short(*m);
  }
  if (f.probe == "bench.callgrind" && !f.attribution.empty()) {
    line += ":";
    for (const Attribution& a : f.attribution) line += fmt::format(" {} {:.0f}%", a.component, 100 * a.share);
    return line;
  }
  if (!f.notes.empty()) return line + ": " + shorten(f.notes.front(), 110);
  return line;
}

std::string render_summary(const LoopResult& r, const std::string& report_path) {
  std::string out = fmt::format("episode {} (run {}, {})\n", r.episode, r.run.name, r.passed ? "PASS" : r.paused ? "PAUSED" : "NOT PASSED");
  out += fmt::format("  verdict     {}\n", r.outcome);
  out += fmt::format("  final gate  {}\n", r.final_gate);
  out += fmt::format("  experiments {} ({} replayed from the journal), {:.1f} s of probes\n", r.experiments.size(),
                     r.replayed, r.spent_s);
  for (const LoggedExperiment& e : r.experiments) {
    out += fmt::format("    {:>3} {:<19} t{}  {}\n", e.step, e.spec.probe, e.spec.tier, shorten(e.spec.hypothesis, 150));
    std::string diff;
    for (const auto& [k, v] : e.spec.config_diff) diff += fmt::format(" {}={}", k, v);
    out += fmt::format("        -> {}{} -> {}\n", shorten(result_line(e.feedback), 140),
                       diff.empty() ? "" : " |" + diff, decision_name(e.decision));
  }
  if (r.findings.empty()) {
    out += "  root cause  none found (no change was kept)\n";
  } else {
    out += "  root cause\n";
    for (size_t i = 0; i < r.findings.size(); ++i) {
      const Finding& f = r.findings[i];
      out += fmt::format("    {}. {}: {} {} -> {}\n", i + 1, f.component, f.knob, f.from, f.to);
      for (const std::string& ev : f.evidence) out += fmt::format("       evidence: {}\n", ev);
      out += fmt::format("       gain: {}\n", f.gain);
    }
  }
  out += "  config diff";
  bool any = false;
  for (const auto& [k, v] : r.final_config) {
    auto it = r.start.find(k);
    if (it != r.start.end() && it->second == v) continue;
    out += fmt::format("  {}: {} -> {}", k, it == r.start.end() ? "(default)" : it->second, v);
    any = true;
  }
  out += any ? "\n" : "  (none)\n";
  if (!report_path.empty()) out += fmt::format("  report      {}\n", report_path);
  return out;
}

nlohmann::json summary_json(const LoopResult& r, const std::string& report_path) {
  using nlohmann::json;
  json exps = json::array();
  for (const LoggedExperiment& e : r.experiments) {
    exps.push_back({{"step", e.step},
                    {"hypothesis", e.spec.hypothesis},
                    {"probe", e.spec.probe},
                    {"tier", e.spec.tier},
                    {"config_diff", e.spec.config_diff},
                    {"verdict", verdict_name(e.feedback.verdict)},
                    {"result", result_line(e.feedback)},
                    {"decision", decision_name(e.decision)},
                    {"cost_s", e.feedback.cost_s}});
  }
  json findings = json::array();
  for (const Finding& f : r.findings)
    findings.push_back({{"step", f.step}, {"component", f.component}, {"knob", f.knob}, {"from", f.from}, {"to", f.to},
                        {"evidence", f.evidence}, {"gain", f.gain}, {"hypothesis", f.hypothesis}});
  return {{"episode", r.episode},     {"run", r.run.name},          {"run_id", r.run.id},
          {"passed", r.passed},       {"paused", r.paused},         {"outcome", r.outcome},       {"final_gate", r.final_gate},
          {"start", r.start},         {"final_config", r.final_config}, {"experiments", exps},
          {"root_cause", findings},   {"spent_s", r.spent_s},       {"replayed", r.replayed},
          {"report", report_path.empty() ? json(nullptr) : json(report_path)}};
}

}  // namespace recur::agent
