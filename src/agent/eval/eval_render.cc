// What `recur agent eval` prints (eval.h): a table per proposer with one row per episode
// (aggregated over repeats) and a summary line, the same as JSON, and the eval page (one row
// per episode and proposer, each repeat linking its run's report; offline, like the report).
#include <algorithm>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "eval/eval.h"
#include "report/report_html.h"
#include "report/report_style.h"
#include "analyze/text_table.h"

namespace recur::agent {

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The runs of one proposer on one episode, in run order.
struct Cell {
  std::string episode;
  bool expect_passes = true, expect_no_change = false, has_expect = false;
  std::vector<const EvalRun*> runs;
};

std::vector<Cell> cells_of(const EvalResult& r, const std::string& proposer) {
  std::vector<Cell> out;
  for (const EvalRun& run : r.runs) {
    if (run.proposer != proposer) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const Cell& c) { return c.episode == run.episode; });
    if (it == out.end()) {
      out.push_back({run.episode, run.expect_passes, run.expect_no_change, run.has_expect, {}});
      it = out.end() - 1;
    }
    it->runs.push_back(&run);
  }
  return out;
}

std::string expected_text(const Cell& c) {
  if (!c.has_expect) return "pass (no [expect])";
  if (!c.expect_passes) return "honest stop";
  return c.expect_no_change ? "no change" : "pass";
}

std::string fraction(int n, int d) { return fmt::format("{}/{}", n, d); }

std::string seconds(double s) { return fmt::format("{:.1f}", s); }

std::string percent(double part, double whole) { return whole > 0 ? fmt::format("{:.0f}%", 100 * part / whole) : "-"; }

std::string summary_line(const ProposerScore& s) {
  std::string line = fmt::format("outcome met {} ({}), root cause named {} ({}), gate passed {}/{}", fraction(s.outcome_met, s.runs),
                                 percent(s.outcome_met, s.runs), fraction(s.root_cause_named, s.feasible_runs),
                                 percent(s.root_cause_named, s.feasible_runs), s.passed, s.runs);
  line += s.median_s_to_pass ? fmt::format(", median probe-s-to-pass {:.1f} s", *s.median_s_to_pass)
                             : ", median probe-s-to-pass: not reached (half or more of the runs did not pass)";
  line += fmt::format(", wasted {:.1f} of {:.1f} probe s ({})", s.wasted_s, s.probe_s, percent(s.wasted_s, s.probe_s));
  line += fmt::format(", {} probe(s) of knobs the workload did not read", s.dead_probes);
  if (s.speedup_vs_random) line += fmt::format(", {:.2f}x faster to pass than random", *s.speedup_vs_random);
  if (s.random_median_not_reached)
    line += ", the random proposer's median probe-s-to-pass was not reached (it passed under half of its runs)";
  if (s.outcome_rate_vs_random) line += fmt::format(", outcome rate {:.2f}x random's", *s.outcome_rate_vs_random);
  if (s.errors) line += fmt::format(", {} run(s) ended in an error", s.errors);
  return line;
}

json run_json(const EvalRun& r) {
  json j = {{"episode", r.episode}, {"episode_path", r.episode_path}, {"proposer", r.proposer}, {"repeat", r.repeat},
            {"run", r.run_name}, {"report", r.report}, {"passed", r.passed}, {"outcome_met", r.outcome_met},
            {"expected", r.has_expect ? (!r.expect_passes ? "honest stop" : r.expect_no_change ? "no change" : "pass") : "pass"},
            {"changes", r.changes}, {"decoys_kept", r.decoys_kept}, {"root_cause_missing", r.missing},
            {"experiments", r.experiments}, {"probe_s", r.probe_s}, {"wasted_s", r.wasted_s}, {"outcome", r.outcome},
            {"dead_probes", r.dead_probes},
            {"error", r.error}};
  j["root_cause_named"] = r.root_cause_named ? json(*r.root_cause_named) : json(nullptr);
  j["s_to_pass"] = r.s_to_pass ? json(*r.s_to_pass) : json(nullptr);
  return j;
}

json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

}  // namespace

std::string render_eval_text(const EvalResult& r) {
  std::string out;
  for (const ProposerScore& s : r.scores) {
    out += fmt::format("proposer {} ({} runs on {} episodes)\n", s.proposer, s.runs, r.episodes);
    analyze::TextTable t({"episode", "expected", ">met", ">root cause", ">experiments", ">probe s", ">wasted s",
                          ">to pass s", "kept changes (last run)"});
    for (const Cell& c : cells_of(r, s.proposer)) {
      int met = 0, named = 0, feasible = 0;
      std::vector<double> exps, probe, to_pass;
      double wasted = 0;
      for (const EvalRun* run : c.runs) {
        met += run->outcome_met;
        if (run->root_cause_named) {
          ++feasible;
          named += *run->root_cause_named;
        }
        exps.push_back(run->experiments);
        probe.push_back(run->probe_s);
        wasted += run->wasted_s;
        if (run->s_to_pass) to_pass.push_back(*run->s_to_pass);
      }
      std::string changes;
      for (const std::string& ch : c.runs.back()->changes) changes += (changes.empty() ? "" : " ") + ch;
      if (c.runs.back()->error) changes = c.runs.back()->outcome;
      t.add_row({c.episode, expected_text(c), fraction(met, int(c.runs.size())), feasible ? fraction(named, feasible) : "-",
                 fmt::format("{:.0f}", median_of(exps)), seconds(median_of(probe)), seconds(wasted / c.runs.size()),
                 to_pass.empty() ? "-" : seconds(median_of(to_pass)), changes.empty() ? "(none)" : changes});
    }
    out += t.render(2);
    out += "  (met, root cause: runs; experiments, probe s, to pass: medians over runs; wasted s: mean)\n";
    out += "  summary: " + summary_line(s) + "\n\n";
  }
  out += fmt::format("{} runs in {:.0f} s; journal {}; page {}\n", r.runs.size(), r.wall_s, r.journal, r.html);
  return out;
}

json eval_json(const EvalResult& r) {
  json j = {{"journal", r.journal}, {"html", r.html}, {"wall_s", r.wall_s}, {"episodes", r.episodes}};
  j["runs"] = json::array();
  for (const EvalRun& run : r.runs) j["runs"].push_back(run_json(run));
  j["proposers"] = json::array();
  for (const ProposerScore& s : r.scores)
    j["proposers"].push_back({{"proposer", s.proposer}, {"runs", s.runs}, {"outcome_met", s.outcome_met},
                              {"outcome_rate", s.outcome_rate}, {"feasible_runs", s.feasible_runs},
                              {"root_cause_named", s.root_cause_named}, {"root_cause_accuracy", s.root_cause_accuracy},
                              {"passed", s.passed}, {"errors", s.errors},
                              {"median_s_to_pass", optional_json(s.median_s_to_pass)}, {"probe_s", s.probe_s},
                              {"wasted_s", s.wasted_s}, {"dead_probes", s.dead_probes},
                              {"speedup_vs_random", optional_json(s.speedup_vs_random)},
                              {"outcome_rate_vs_random", optional_json(s.outcome_rate_vs_random)},
                              {"random_median_not_reached", s.random_median_not_reached},
                              {"summary", summary_line(s)}});
  return j;
}

std::string render_eval_html(const EvalResult& r) {
  const fs::path page_dir = fs::path(r.html).parent_path();
  std::string h = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>recur agent eval</title><style>";
  h += kReportCss;
  h += ".met { --c: var(--keep); } .unmet { --c: var(--revert); }</style></head><body>\n<h1>recur agent eval</h1>\n";
  h += fmt::format("<p>{} runs on {} episodes in {}; journal <code>{}</code></p>\n", r.runs.size(), r.episodes,
                   html_escape(duration_text(r.wall_s)), html_escape(r.journal));
  h += "<h2 id=\"summary\">Proposers</h2>\n<table class=\"proposers\"><tr><th>proposer</th><th>summary</th></tr>\n";
  for (const ProposerScore& s : r.scores)
    h += fmt::format("<tr><td class=\"knob\">{}</td><td>{}</td></tr>\n", html_escape(s.proposer), html_escape(summary_line(s)));
  h += "</table>\n<h2 id=\"runs\">Episodes</h2>\n<table class=\"episodes\"><tr><th>episode</th><th>expected</th>"
       "<th>proposer</th><th>runs (each links its report)</th></tr>\n";
  std::vector<std::string> episodes;
  for (const EvalRun& run : r.runs)
    if (std::find(episodes.begin(), episodes.end(), run.episode) == episodes.end()) episodes.push_back(run.episode);
  for (const std::string& ep : episodes) {
    for (const ProposerScore& s : r.scores) {
      for (const Cell& c : cells_of(r, s.proposer)) {
        if (c.episode != ep) continue;
        std::string runs;
        for (const EvalRun* run : c.runs) {
          std::string title = run->outcome;
          if (!run->changes.empty()) title += "; changes:";
          for (const std::string& ch : run->changes) title += " " + ch;
          std::string label = fmt::format("{} {} {:.1f} s", run->outcome_met ? "met" : "not met",
                                          run->root_cause_named ? (*run->root_cause_named ? "cause" : "no cause") : "",
                                          run->probe_s);
          std::string link = run->report.empty() ? "" : fs::relative(run->report, page_dir.empty() ? "." : page_dir).string();
          const std::string badge = fmt::format("<span class=\"badge {}\" title=\"{}\">{}</span>",
                                                run->outcome_met ? "met" : "unmet", html_escape(title), html_escape(label));
          runs += link.empty() ? badge : fmt::format("<a href=\"{}\">{}</a> ", html_escape(url_path(link)), badge);
        }
        h += fmt::format("<tr id=\"{}-{}\"><td class=\"knob\">{}</td><td>{}</td><td class=\"knob\">{}</td><td>{}</td></tr>\n",
                         html_escape(ep), html_escape(s.proposer), html_escape(ep), html_escape(expected_text(c)),
                         html_escape(s.proposer), runs);
      }
    }
  }
  h += "</table>\n</body></html>\n";
  return h;
}

}  // namespace recur::agent
