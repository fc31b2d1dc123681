#include "report/report_charts.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/report_html.h"

namespace recur::agent {
namespace {

// Timeline geometry (px).
constexpr double kTlWidth = 960, kTlLabel = 220, kTlRight = 16, kTlTop = 26, kTlRow = 20, kTlBottom = 8;
// Metric chart geometry (px).
constexpr double kChWidth = 470, kChHeight = 200, kChLeft = 64, kChRight = 62, kChTop = 14, kChBottom = 34;

std::string shortened(const std::string& s, size_t max) {
  if (s.size() <= max) return s;
  size_t cut = max - 1;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 char
  return s.substr(0, cut) + "…";
}

}  // namespace

std::string verdict_text(const ExperimentRecord& e) {
  return e.verdict ? std::string(verdict_name(*e.verdict)) : std::string(experiment_state_name(e.state));
}

std::string decision_class(const ExperimentRecord& e) {
  return e.decision ? std::string(decision_name(*e.decision)) : "pending";
}

std::string timeline_svg(const ReportData& d) {
  const double span = d.end_s - d.start_s, plot_w = kTlWidth - kTlLabel - kTlRight;
  auto x = [&](double t) { return kTlLabel + (t - d.start_s) / span * plot_w; };
  const double height = kTlTop + kTlRow * double(d.experiments.size()) + kTlBottom;
  std::string out = fmt::format(
      "<svg class=\"timeline\" role=\"img\" aria-label=\"experiment timeline\" width=\"{0}\" height=\"{1}\" "
      "viewBox=\"0 0 {0} {1}\" xmlns=\"http://www.w3.org/2000/svg\">\n",
      kTlWidth, height);
  for (int i = 0; i <= 4; ++i) {  // time axis: five ticks from the run's start
    double tx = kTlLabel + plot_w * i / 4;
    out += fmt::format("<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" y2=\"{2}\"/>"
                       "<text class=\"axis\" x=\"{0:.1f}\" y=\"{3}\" text-anchor=\"{4}\">+{5}</text>\n",
                       tx, kTlTop - 6, height - kTlBottom, kTlTop - 10, i == 4 ? "end" : i == 0 ? "start" : "middle",
                       html_escape(duration_text(span * i / 4)));
  }
  for (size_t i = 0; i < d.experiments.size(); ++i) {
    const ExperimentRecord& e = d.experiments[i];
    double y = kTlTop + kTlRow * double(i);
    double t0 = e.started_at.value_or(e.planned_at);
    double t1 = e.ended_at.value_or(e.state == ExperimentState::kRunning ? d.end_s : t0);
    double x0 = x(t0), w = std::max(3.0, x(t1) - x0);  // a visible mark even for a millisecond probe
    std::string title = fmt::format("step {} (tier {}) {}: {} → {} → {} ({}, probe cost {})", e.step, e.spec.tier,
                                    e.spec.probe, e.spec.hypothesis, verdict_text(e), decision_class(e),
                                    duration_text(t1 - t0), duration_text(e.cost_s));
    out += fmt::format(
        "<g class=\"tl-row\" id=\"tl-step-{0}\"><title>{1}</title>"
        "<text class=\"tl-label\" x=\"4\" y=\"{2:.1f}\">{0} · T{3} · {4}</text>"
        "<a href=\"#step-{0}\"><rect class=\"tl-bar decision-{5} tier-{3}\" x=\"{6:.1f}\" y=\"{7:.1f}\" "
        "width=\"{8:.1f}\" height=\"{9}\" rx=\"2\"/></a></g>\n",
        e.step, html_escape(title), y + kTlRow * 0.7, e.spec.tier, html_escape(shortened(e.spec.probe, 22)),
        decision_class(e), x0, y + 3, w, kTlRow - 6);
  }
  out += "</svg>\n";
  return out;
}

std::string metric_chart_svg(const GateSeries& s) {
  double lo = INFINITY, hi = -INFINITY;
  for (const GatePoint& p : s.points) {
    lo = std::min({lo, p.value, p.ci95 ? p.ci95->first : p.value});
    hi = std::max({hi, p.value, p.ci95 ? p.ci95->second : p.value});
  }
  if (s.threshold) lo = std::min(lo, *s.threshold), hi = std::max(hi, *s.threshold);
  if (!std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  double pad = hi > lo ? (hi - lo) * 0.08 : std::max(std::abs(hi) * 0.1, 1e-9);
  lo -= pad, hi += pad;
  const double plot_w = kChWidth - kChLeft - kChRight, plot_h = kChHeight - kChTop - kChBottom;
  auto y = [&](double v) { return kChTop + (hi - v) / (hi - lo) * plot_h; };
  auto x = [&](size_t i) { return kChLeft + (double(i) + 0.5) / double(s.points.size()) * plot_w; };

  std::string out = fmt::format(
      "<svg class=\"metric-chart\" role=\"img\" aria-label=\"{0}\" width=\"{1}\" height=\"{2}\" "
      "viewBox=\"0 0 {1} {2}\" xmlns=\"http://www.w3.org/2000/svg\">\n"
      "<rect class=\"frame\" x=\"{3}\" y=\"{4}\" width=\"{5}\" height=\"{6}\"/>\n",
      html_escape(s.metric), kChWidth, kChHeight, kChLeft, kChTop, plot_w, plot_h);
  for (double v : {hi - pad, (hi + lo) / 2, lo + pad}) {
    out += fmt::format("<text class=\"axis\" x=\"{}\" y=\"{:.1f}\" text-anchor=\"end\">{}</text>\n", kChLeft - 6,
                       y(v) + 4, html_escape(number_text(v)));
  }
  if (s.threshold) {
    out += fmt::format("<line class=\"threshold\" x1=\"{0}\" y1=\"{1:.1f}\" x2=\"{2}\" y2=\"{1:.1f}\"><title>condition: "
                       "{3} {4} {5}</title></line>"
                       "<text class=\"threshold-label\" x=\"{6}\" y=\"{7:.1f}\">{4} {5}</text>\n",
                       kChLeft, y(*s.threshold), kChLeft + plot_w, html_escape(s.metric), html_escape(s.threshold_op),
                       html_escape(number_text(*s.threshold)), kChLeft + plot_w + 4, y(*s.threshold) + 4);
  }
  std::string polyline;
  for (size_t i = 0; i < s.points.size(); ++i) polyline += fmt::format("{:.1f},{:.1f} ", x(i), y(s.points[i].value));
  out += fmt::format("<polyline class=\"series\" points=\"{}\"/>\n", polyline);
  const size_t label_every = s.points.size() / 10 + 1;  // at most ~10 step labels under the axis
  for (size_t i = 0; i < s.points.size(); ++i) {
    const GatePoint& p = s.points[i];
    std::string ci = p.ci95 ? fmt::format(" [{}, {}]", number_text(p.ci95->first), number_text(p.ci95->second)) : "";
    out += fmt::format("<g class=\"gate-point\"><title>step {}: {}{}{}{}</title>", p.step, number_text(p.value),
                       s.unit.empty() ? "" : " ", html_escape(s.unit), ci);
    if (p.ci95) {
      double a = y(p.ci95->first), b = y(p.ci95->second), xi = x(i);
      out += fmt::format("<line class=\"ci\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\"/>"
                         "<line class=\"ci-cap\" x1=\"{3:.1f}\" y1=\"{1:.1f}\" x2=\"{4:.1f}\" y2=\"{1:.1f}\"/>"
                         "<line class=\"ci-cap\" x1=\"{3:.1f}\" y1=\"{2:.1f}\" x2=\"{4:.1f}\" y2=\"{2:.1f}\"/>",
                         xi, a, b, xi - 5, xi + 5);
    }
    out += fmt::format("<circle class=\"point\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\"/>", x(i), y(p.value));
    if (i % label_every == 0) {
      out += fmt::format("<text class=\"axis\" x=\"{:.1f}\" y=\"{}\" text-anchor=\"middle\">step {}</text>", x(i),
                         kChHeight - kChBottom + 16, p.step);
    }
    out += "</g>\n";
  }
  out += "</svg>\n";
  return out;
}

}  // namespace recur::agent
