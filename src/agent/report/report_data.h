// What the run report shows, gathered from the journal in one pass (report.h renders it).
// build_report_data is a pure function of the records, so tests can give it any run.
// Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "journal/journal.h"

namespace recur::agent {

struct ReportCounts {
  size_t experiments = 0;
  size_t done = 0;
  size_t keep = 0, revert = 0, none = 0;  // decisions of done experiments
  size_t gate_evaluations = 0;            // done experiments with probe "gate"
  size_t gate_metrics = 0;                // charts: metrics seen in gate evaluations
  size_t artifacts = 0;                   // links, over every experiment
  double probe_cost_s = 0;                // sum of the Feedback cost_s
};

// One gate metric over the run's gate evaluations ("time_us(cand)").
struct GatePoint {
  int64_t step = 0;
  double value = 0;
  std::optional<std::pair<double, double>> ci95;
};
struct GateSeries {
  std::string metric;
  std::string unit;
  std::vector<GatePoint> points;  // in step order
  // From the latest gate whose condition notes have a clause comparing this metric with a number
  // ("time_us(cand) <= 40"): the number and the operator.
  std::optional<double> threshold;
  std::string threshold_op;
};

struct ArtifactLink {
  int64_t step = 0;
  std::string key;   // "trace", "report", "spec"
  std::string path;  // as recorded
  std::string href;  // relative to the report's folder, URL-encoded
  bool exists = false;
};

struct ReportData {
  std::string journal_path;
  RunRecord run;
  std::vector<ExperimentRecord> experiments;  // in step order
  KnobDiff final_config;                      // base config + kept diffs (ResumePlan::config)
  std::map<std::string, int64_t> set_by_step; // knob -> the last kept step that set it
  std::vector<GateSeries> gate_series;        // those with a threshold first, then by first appearance
  std::vector<ArtifactLink> artifacts;        // in step order, then key order
  ReportCounts counts;
  double start_s = 0, end_s = 0;              // the timeline's span (unix seconds), end > start
};

// The gate metrics this report charts: every metric of a gate Feedback except its
// conditions_pass/fail/inconclusive counters.
bool is_gate_chart_metric(std::string_view metric_name);

// The number a condition compares `metric` with, if one of its clauses (split at and/or) is
// `METRIC OP NUMBER` or `NUMBER OP METRIC` (OP one of >= <= > < == !=; spaces ignored). The
// operator is returned as written with the metric on the left ("5 > m" gives "<").
std::optional<std::pair<double, std::string>> condition_threshold(std::string_view condition,
                                                                  std::string_view metric);

// Everything the page needs. Artifact paths that are relative are taken from `journal_dir`;
// hrefs are made relative to `report_dir` (both made absolute first).
ReportData build_report_data(std::string journal_path, RunRecord run, std::vector<ExperimentRecord> experiments,
                             KnobDiff final_config, const std::string& report_dir);

// Reads the run (by name or id), its experiments and its resume plan's config from the journal.
Result<ReportData> load_report_data(const Journal& journal, std::string_view run, const std::string& report_dir);

}  // namespace recur::agent
