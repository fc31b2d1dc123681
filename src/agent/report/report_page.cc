// render_report_html (report.h): the page, section by section. Every journal string passes
// through html_escape (the `esc` alias below); numbers and ids are ours.
#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "report/report.h"
#include "report/report_charts.h"
#include "report/report_html.h"
#include "report/report_style.h"
#include "core/version.h"

namespace recur::agent {
namespace {

std::string esc(std::string_view s) { return html_escape(s); }

std::string badge(std::string_view decision) {
  return fmt::format("<span class=\"badge decision-{0}\">{0}</span>", decision);
}

std::string diff_html(const KnobDiff& diff) {
  if (diff.empty()) return "<span class=\"muted\">none</span>";
  std::string out;
  for (const auto& [knob, value] : diff) {
    out += fmt::format("{}<code>{}={}</code>", out.empty() ? "" : " ", esc(knob), esc(value));
  }
  return out;
}

std::string summary_section(const ReportData& d) {
  const RunRecord& r = d.run;
  const ReportCounts& c = d.counts;
  double elapsed = r.ended_at.value_or(d.end_s) - r.created_at;
  std::string out = fmt::format("<header id=\"summary\">\n<h1>Agent run <span class=\"run-name\">{}</span></h1>\n"
                                "<dl class=\"summary\">\n",
                                esc(r.name));
  auto row = [&](std::string_view key, std::string_view id, const std::string& html) {
    out += fmt::format("<dt>{}</dt><dd id=\"{}\">{}</dd>\n", key, id, html);
  };
  row("episode", "episode", r.episode.empty() ? "<span class=\"muted\">-</span>" : esc(r.episode));
  row("state", "state", esc(r.state) + (r.outcome.empty() ? "" : ": " + esc(r.outcome)));
  row("started", "started", esc(utc_time_text(r.created_at)));
  row("elapsed", "elapsed", esc(duration_text(elapsed)) + (r.ended_at ? "" : " <span class=\"muted\">(so far)</span>"));
  row("probe cost", "probe-cost", esc(duration_text(c.probe_cost_s)));
  row("experiments", "experiment-count",
      fmt::format("{} ({} done, {} gate evaluations)", c.experiments, c.done, c.gate_evaluations));
  row("decisions", "decision-counts",
      fmt::format("{} {}, {} {}, {} {}", c.keep, badge("keep"), c.revert, badge("revert"), c.none, badge("none")));
  row("journal", "journal", fmt::format("<code>{}</code>, run id {}", esc(d.journal_path), r.id));
  out += "</dl>\n</header>\n";
  return out;
}

std::string timeline_section(const ReportData& d) {
  std::string out = "<section id=\"timeline\">\n<h2>Experiment timeline</h2>\n";
  if (d.experiments.empty()) return out + "<p class=\"empty\">No experiments yet.</p>\n</section>\n";
  out += "<p class=\"legend\">";
  for (std::string_view dc : {"keep", "revert", "none", "pending"})
    out += fmt::format("<span><span class=\"badge decision-{0}\"></span> {0}</span>", dc);
  out += fmt::format("<span class=\"muted\">wall time from {} · rows: step · tier · probe</span></p>\n",
                     esc(utc_time_text(d.start_s)));
  out += timeline_svg(d);
  out += "<table class=\"timeline-table\"><thead><tr><th>step</th><th>tier</th><th>hypothesis</th><th>probe</th>"
         "<th>verdict</th><th>decision</th><th>cost</th></tr></thead><tbody>\n";
  for (const ExperimentRecord& e : d.experiments) {
    out += fmt::format("<tr class=\"tl-entry\"><td class=\"num\"><a href=\"#step-{0}\">{0}</a></td><td>{1}</td>"
                       "<td>{2}</td><td>→ <code>{3}</code></td><td>→ {4}</td><td>→ {5}</td><td class=\"num\">{6}</td>"
                       "</tr>\n",
                       e.step, e.spec.tier, esc(e.spec.hypothesis), esc(e.spec.probe), esc(verdict_text(e)),
                       badge(decision_class(e)), esc(duration_text(e.cost_s)));
  }
  return out + "</tbody></table>\n</section>\n";
}

std::string metrics_section(const ReportData& d) {
  std::string out = "<section id=\"metrics\">\n<h2>Gate metrics over iterations</h2>\n";
  if (d.gate_series.empty()) return out + "<p class=\"empty\">No gate evaluation yet.</p>\n</section>\n";
  out += "<div class=\"metric-grid\">\n";
  for (size_t k = 0; k < d.gate_series.size(); ++k) {
    const GateSeries& s = d.gate_series[k];
    std::string threshold =
        s.threshold ? fmt::format(" <span class=\"muted\">(condition: {} {})</span>", esc(s.threshold_op),
                                  esc(number_text(*s.threshold)))
                    : "";
    out += fmt::format("<figure class=\"metric\" id=\"metric-{}\"><figcaption><code>{}</code>{}{}</figcaption>\n", k,
                       esc(s.metric), s.unit.empty() ? "" : " in " + esc(s.unit), threshold);
    out += metric_chart_svg(s);
    out += "<table class=\"metric-values\"><thead><tr><th>step</th><th>value</th><th>ci95</th></tr></thead><tbody>";
    for (const GatePoint& p : s.points) {
      out += fmt::format("<tr><td class=\"num\"><a href=\"#step-{0}\">{0}</a></td><td class=\"num\">{1}</td>"
                         "<td class=\"num\">{2}</td></tr>",
                         p.step, esc(number_text(p.value)),
                         p.ci95 ? fmt::format("[{}, {}]", esc(number_text(p.ci95->first)), esc(number_text(p.ci95->second)))
                                : "-");
    }
    out += "</tbody></table></figure>\n";
  }
  return out + "</div>\n</section>\n";
}

std::string artifact_link(const ArtifactLink& a) {
  return fmt::format("<a class=\"artifact\" href=\"{}\">{}</a>{}", esc(a.href), esc(a.path),
                     a.exists ? "" : " <span class=\"missing\">(missing)</span>");
}

std::string feedback_html(const Feedback& f, const std::vector<ArtifactLink>& links) {
  std::string out = fmt::format(
      "<div class=\"feedback\"><p><b>Feedback</b> <code>{}</code> (tier {}, {}) · verdict <b>{}</b></p>\n"
      "<dl><dt>subject</dt><dd>{}</dd><dt>hypothesis</dt><dd>{}</dd></dl>\n",
      esc(f.probe), f.tier, esc(duration_text(f.cost_s)), verdict_name(f.verdict), esc(f.subject), esc(f.hypothesis));
  if (!f.metrics.empty()) {
    out += "<table class=\"feedback-metrics\"><thead><tr><th>metric</th><th>value</th><th>ci95</th><th>unit</th>"
           "</tr></thead><tbody>";
    for (const Metric& m : f.metrics) {
      out += fmt::format(
          "<tr><td><code>{}</code></td><td class=\"num\">{}</td><td class=\"num\">{}</td><td>{}</td></tr>", esc(m.name),
          esc(number_text(m.value)),
          m.ci95 ? fmt::format("[{}, {}]", esc(number_text(m.ci95->first)), esc(number_text(m.ci95->second))) : "-",
          esc(m.unit));
    }
    out += "</tbody></table>\n";
  }
  if (!f.attribution.empty()) {
    out += fmt::format("<div class=\"attribution\"><p>attribution{}</p>\n",
                       f.attribution_is_decomposition ? " (a decomposition: the shares sum to 1)" : "");
    for (const Attribution& a : f.attribution) {
      out += fmt::format("<div class=\"row\"><code>{}</code><div class=\"attr-track\"><div class=\"attr-bar\" "
                         "style=\"width:{:.1f}%\"></div></div><span>{:.0f}% · {}</span></div>\n",
                         esc(a.component), std::clamp(a.share, 0.0, 1.0) * 100, a.share * 100, esc(a.evidence));
    }
    out += "</div>\n";
  }
  auto list = [&](std::string_view cls, std::string_view title, const std::vector<std::string>& items) {
    if (items.empty()) return;
    out += fmt::format("<p>{}</p><ul class=\"{}\">", title, cls);
    for (const std::string& item : items) out += "<li>" + esc(item) + "</li>";
    out += "</ul>\n";
  };
  list("notes", "notes", f.notes);
  list("next", "next", f.next);
  if (!links.empty()) {
    out += "<p>artifacts</p><ul class=\"artifact-links\">";
    for (const ArtifactLink& a : links) out += fmt::format("<li>{}: {}</li>", esc(a.key), artifact_link(a));
    out += "</ul>\n";
  }
  return out + "</div>\n";
}

std::string decisions_section(const ReportData& d) {
  std::string out = "<section id=\"decisions\">\n<h2>Experiments and their Feedback</h2>\n";
  if (d.experiments.empty()) return out + "<p class=\"empty\">No experiments yet.</p>\n</section>\n";
  for (const ExperimentRecord& e : d.experiments) {
    std::string dc = decision_class(e);
    bool changed_config = dc == "keep" || dc == "revert";
    out += fmt::format("<details class=\"experiment decision-{0}\" id=\"step-{1}\"{2}><summary>step {1} · tier {3} · "
                       "<code>{4}</code> · {5} · {6} — {7}</summary>\n",
                       dc, e.step, changed_config ? " open" : "", e.spec.tier, esc(e.spec.probe), esc(verdict_text(e)),
                       badge(dc), esc(e.spec.hypothesis));
    out += fmt::format("<dl><dt>config diff</dt><dd class=\"config-diff\">{}</dd><dt>state</dt><dd>{}, {} attempt{}</dd>"
                       "<dt>planned</dt><dd>{}</dd>",
                       diff_html(e.spec.config_diff), experiment_state_name(e.state), e.attempts,
                       e.attempts == 1 ? "" : "s", esc(utc_time_text(e.planned_at)));
    if (e.started_at && e.ended_at) {
      out += fmt::format("<dt>ran</dt><dd>{} for {}</dd>", esc(utc_time_text(*e.started_at)),
                         esc(duration_text(*e.ended_at - *e.started_at)));
    }
    out += "</dl>\n";
    std::vector<ArtifactLink> links;
    std::copy_if(d.artifacts.begin(), d.artifacts.end(), std::back_inserter(links),
                 [&](const ArtifactLink& a) { return a.step == e.step; });
    out += e.feedback ? feedback_html(*e.feedback, links) : "<p class=\"empty\">No Feedback yet.</p>\n";
    out += "</details>\n";
  }
  return out + "</section>\n";
}

std::string config_section(const ReportData& d) {
  std::string out = "<section id=\"config\">\n<h2>Configuration: base → final</h2>\n";
  std::set<std::string> knobs;
  for (const auto& [k, v] : d.run.base_config) knobs.insert(k);
  for (const auto& [k, v] : d.final_config) knobs.insert(k);
  if (knobs.empty()) return out + "<p class=\"empty\">No knobs set: the defaults throughout.</p>\n</section>\n";
  size_t changed = 0;
  std::string rows;
  for (const std::string& k : knobs) {
    auto b = d.run.base_config.find(k), f = d.final_config.find(k);
    std::string base = b == d.run.base_config.end() ? "" : b->second, fin = f == d.final_config.end() ? "" : f->second;
    bool differs = (b == d.run.base_config.end()) != (f == d.final_config.end()) || base != fin;
    changed += differs;
    auto cell = [](bool present, const std::string& v, std::string_view cls) {
      return present ? fmt::format("<td class=\"value {}\">{}</td>", cls, html_escape(v))
                     : fmt::format("<td class=\"value {} muted\">(default)</td>", cls);
    };
    auto by = d.set_by_step.find(k);
    rows += fmt::format("<tr class=\"knob{}\" data-knob=\"{}\"><td class=\"knob\">{}</td>{}{}<td>{}</td></tr>\n",
                        differs ? " changed" : "", esc(k), esc(k), cell(b != d.run.base_config.end(), base, "base"),
                        cell(f != d.final_config.end(), fin, "final"),
                        differs && by != d.set_by_step.end() ? fmt::format("<a href=\"#step-{0}\">step {0}</a>", by->second)
                                                             : "");
  }
  out += fmt::format("<p>{} of {} knobs changed: the base configuration plus the diffs of the kept experiments, in "
                     "step order.</p>\n",
                     changed, knobs.size());
  out += "<table class=\"config-diff\"><thead><tr><th>knob</th><th>base</th><th>final</th><th>set by</th></tr></thead>"
         "<tbody>\n" +
         rows + "</tbody></table>\n</section>\n";
  return out;
}

std::string artifacts_section(const ReportData& d) {
  std::string out = "<section id=\"artifacts\">\n<h2>Traces and other artifacts</h2>\n";
  if (d.artifacts.empty()) return out + "<p class=\"empty\">No artifacts recorded.</p>\n</section>\n";
  out += "<p class=\"muted\">Links are relative to this page's folder; open traces in the Perfetto UI or with "
         "<code>recur analyze</code>.</p>\n<ul class=\"artifact-list\">\n";
  for (const ArtifactLink& a : d.artifacts) {
    out += fmt::format("<li><a href=\"#step-{0}\">step {0}</a> {1}: {2}</li>\n", a.step, esc(a.key), artifact_link(a));
  }
  return out + "</ul>\n</section>\n";
}

}  // namespace

std::string render_report_html(const ReportData& d) {
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      "<title>recur agent run {}</title>\n<style>{}</style>\n</head>\n<body>\n",
      esc(d.run.name), kReportCss);
  out += summary_section(d);
  out += timeline_section(d);
  out += metrics_section(d);
  out += decisions_section(d);
  out += config_section(d);
  out += artifacts_section(d);
  out += fmt::format("<footer class=\"muted\"><p>Written by recur {} from the journal; self-contained, no scripts."
                     "</p></footer>\n</body>\n</html>\n",
                     kRecurVersion);
  return out;
}

}  // namespace recur::agent
