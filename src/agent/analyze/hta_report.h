// The output of `recur analyze hta`: HTA's tables as text, the same as JSON, and the Feedback
// record (probe "analyze.hta", tier 0) an agent reads. The JSON layout is documented in
// docs/analyses.md ("## hta", "JSON"). Plain functions; thread-safe.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "analyze/hta.h"
#include "core/feedback.h"

namespace recur::analyze {

// HTA's tables (comm_comp_overlap, temporal_breakdown, gpu_kernel_breakdown,
// idle_time_breakdown, cuda_kernel_launch_stats, queue_length_summary), close to how HTA
// prints them.
std::string hta_report_text(const HtaReport& report);

// Every table as JSON: {"path", "ranks": [{"rank", "file", ..., "temporal", "idle_time",
// "launch_stats", "queue_length", "kernel_types"}], "kernel_types", "notes", ...}; NaN is null.
nlohmann::json hta_report_json(const HtaReport& report);

// Metrics per rank ("rank0.comm_comp_overlap_pct", "rank0.idle_us", ...) and the notes.
Feedback hta_feedback(const HtaReport& report);

}  // namespace recur::analyze
