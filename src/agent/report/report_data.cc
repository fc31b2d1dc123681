#include "report/report_data.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "report/report_html.h"

namespace recur::agent {
namespace {

namespace fs = std::filesystem;

std::string without_spaces(std::string_view s) {
  std::string out;
  for (char c : s)
    if (c != ' ' && c != '\t') out += c;
  return out;
}

std::optional<double> whole_number(std::string_view s) {
  std::string text = without_spaces(s);
  if (text.empty()) return std::nullopt;
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end != text.c_str() + text.size()) return std::nullopt;
  return v;
}

// The clauses of a condition: split at `and`, `or`, `&&`, `||` (surrounded by spaces for the words).
std::vector<std::string_view> clauses(std::string_view c) {
  std::vector<std::string_view> out;
  size_t begin = 0;
  for (size_t i = 0; i < c.size();) {
    size_t len = 0;
    if (c.substr(i, 5) == " and ") len = 5;
    else if (c.substr(i, 4) == " or ") len = 4;
    else if (c.substr(i, 2) == "&&" || c.substr(i, 2) == "||") len = 2;
    if (len == 0) {
      ++i;
      continue;
    }
    out.push_back(c.substr(begin, i - begin));
    i += len;
    begin = i;
  }
  out.push_back(c.substr(begin));
  return out;
}

std::string mirrored(std::string_view op) {
  if (op == ">=") return "<=";
  if (op == "<=") return ">=";
  if (op == ">") return "<";
  if (op == "<") return ">";
  return std::string(op);
}

// The text between the first pair of backticks: gate notes quote the condition that way
// ("condition 2 pass: `time_us(cand) <= 40`: ...").
std::optional<std::string_view> quoted_condition(std::string_view note) {
  if (!note.starts_with("condition ")) return std::nullopt;
  size_t a = note.find('`');
  if (a == std::string_view::npos) return std::nullopt;
  size_t b = note.find('`', a + 1);
  if (b == std::string_view::npos) return std::nullopt;
  return note.substr(a + 1, b - a - 1);
}

std::string href_for(const fs::path& target, const fs::path& report_dir) {
  fs::path rel = target.lexically_relative(report_dir);
  return url_path((rel.empty() ? target : rel).generic_string());
}

}  // namespace

bool is_gate_chart_metric(std::string_view metric_name) { return !metric_name.starts_with("conditions_"); }

std::optional<std::pair<double, std::string>> condition_threshold(std::string_view condition,
                                                                  std::string_view metric) {
  const std::string want = without_spaces(metric);
  for (std::string_view clause : clauses(condition)) {
    // The first comparison operator; two-character ones first so ">=" is not read as ">".
    for (std::string_view op : {">=", "<=", "==", "!=", ">", "<"}) {
      size_t at = clause.find(op);
      if (at == std::string_view::npos) continue;
      std::string_view lhs = clause.substr(0, at), rhs = clause.substr(at + op.size());
      if (without_spaces(lhs) == want) {
        if (auto v = whole_number(rhs)) return std::pair(*v, std::string(op));
      } else if (without_spaces(rhs) == want) {
        if (auto v = whole_number(lhs)) return std::pair(*v, mirrored(op));
      }
      break;
    }
  }
  return std::nullopt;
}

ReportData build_report_data(std::string journal_path, RunRecord run, std::vector<ExperimentRecord> experiments,
                             KnobDiff final_config, const std::string& report_dir) {
  ReportData d;
  d.journal_path = std::move(journal_path);
  d.run = std::move(run);
  d.experiments = std::move(experiments);
  std::sort(d.experiments.begin(), d.experiments.end(),
            [](const ExperimentRecord& a, const ExperimentRecord& b) { return a.step < b.step; });
  d.final_config = std::move(final_config);

  // fs::absolute("") throws: an empty folder is the current one.
  auto folder = [](fs::path p) { return fs::absolute(p.empty() ? fs::path(".") : p).lexically_normal(); };
  fs::path journal_dir = folder(fs::path(d.journal_path).parent_path());
  fs::path report_abs = folder(report_dir);
  ReportCounts& c = d.counts;
  c.experiments = d.experiments.size();
  d.start_s = d.run.created_at;
  d.end_s = d.run.ended_at.value_or(d.run.created_at);
  for (const ExperimentRecord& e : d.experiments) {
    for (std::optional<double> t : {std::optional(e.planned_at), e.started_at, e.ended_at}) {
      if (!t) continue;
      d.start_s = std::min(d.start_s, *t);
      d.end_s = std::max(d.end_s, *t);
    }
    if (e.state != ExperimentState::kDone || !e.feedback || !e.decision) continue;
    ++c.done;
    c.probe_cost_s += e.cost_s;
    switch (*e.decision) {
      case Decision::kKeep:
        ++c.keep;
        for (const auto& [knob, value] : e.spec.config_diff) d.set_by_step[knob] = e.step;
        break;
      case Decision::kRevert: ++c.revert; break;
      case Decision::kNone: ++c.none; break;
    }
    const Feedback& f = *e.feedback;
    for (const auto& [key, path] : f.artifacts) {
      fs::path p(path);
      fs::path target = (p.is_absolute() ? p : journal_dir / p).lexically_normal();
      std::error_code ec;
      bool exists = fs::exists(target, ec);
      d.artifacts.push_back({.step = e.step, .key = key, .path = path, .href = href_for(target, report_abs),
                             .exists = exists});
    }
    if (e.spec.probe != "gate") continue;
    ++c.gate_evaluations;
    for (const Metric& m : f.metrics) {
      if (!is_gate_chart_metric(m.name)) continue;
      auto it = std::find_if(d.gate_series.begin(), d.gate_series.end(),
                             [&](const GateSeries& s) { return s.metric == m.name; });
      if (it == d.gate_series.end()) {
        d.gate_series.push_back({.metric = m.name, .unit = m.unit});
        it = d.gate_series.end() - 1;
      }
      it->points.push_back({.step = e.step, .value = m.value, .ci95 = m.ci95});
    }
    // Thresholds come from the latest gate that states one (a later spec may have changed it).
    for (GateSeries& s : d.gate_series) {
      for (const std::string& note : f.notes) {
        auto cond = quoted_condition(note);
        if (!cond) continue;
        if (auto t = condition_threshold(*cond, s.metric)) {
          s.threshold = t->first;
          s.threshold_op = t->second;
          break;
        }
      }
    }
  }
  // Metrics a condition compares with a number first: they are what the gate decides on.
  std::stable_partition(d.gate_series.begin(), d.gate_series.end(),
                        [](const GateSeries& s) { return s.threshold.has_value(); });
  c.gate_metrics = d.gate_series.size();
  c.artifacts = d.artifacts.size();
  if (d.end_s <= d.start_s) d.end_s = d.start_s + 1;
  return d;
}

Result<ReportData> load_report_data(const Journal& journal, std::string_view run, const std::string& report_dir) {
  RECUR_ASSIGN_OR_RETURN(RunRecord r, journal.find_run(run));
  RECUR_ASSIGN_OR_RETURN(std::vector<ExperimentRecord> exps, journal.experiments(r.id));
  RECUR_ASSIGN_OR_RETURN(ResumePlan plan, journal.resume_plan(r.id));
  return build_report_data(journal.path(), std::move(r), std::move(exps), std::move(plan.config), report_dir);
}

}  // namespace recur::agent
