// The run report's inline SVG charts (no script, no external resources): the experiment
// timeline and one chart per gate metric. Each mark carries a <title> (the browser's tooltip)
// and a class the page's CSS colours and the tests count:
//   timeline: g.tl-row#tl-step-N > a[href="#step-N"] > rect.tl-bar.decision-{keep,revert,none,pending}
//   metric:   circle.point, line.ci (one per point with a CI), line.threshold (when known)
// Pure functions of their arguments; thread-safe.
#pragma once

#include <string>

#include "report/report_data.h"

namespace recur::agent {

// One row per experiment over the run's wall time, from its start (planned time if never
// started) to its end (the timeline's end while still running).
std::string timeline_svg(const ReportData& d);

// Values with ci95 error bars per gate evaluation, in step order, and the threshold line.
std::string metric_chart_svg(const GateSeries& s);

// "keep", "revert", "none", or "pending" for an experiment not done yet.
std::string decision_class(const ExperimentRecord& e);
// The verdict, or the state ("planned", "running") of an experiment not done yet.
std::string verdict_text(const ExperimentRecord& e);

}  // namespace recur::agent
