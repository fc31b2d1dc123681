// breakdown: where the time goes, per name, zone path, category or thread, and per thread
// how much of the trace it was busy, idle and waiting.
//
// Rows (over the selected zones), ordered by self time, ties by key (paths segment by segment,
// ZoneTree::path_order()): count, total duration, self time (duration minus the part
// the zone's children on the same track cover, zone_tree.h), mean, p50, p99 and max duration
// (nearest rank: the value at position ceil(p/100 * n) of the sorted durations), and share =
// the row's self time / the self time of every selected zone. Self shares sum to 1, so the
// rows decompose the selected busy thread-time without counting a parent and its children
// twice.
// Threads (tracks holding selected zones): busy = |union of selected zones on the track|,
// idle = trace span - busy (the span of every zone in the trace, so threads compare on one
// time base), waiting = |union of lock_wait zones on the track| (trace/traced_mutex.h), and
// the track's first begin and last end.
// Pure function of the tree (thread-safe for distinct calls).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyze/selector.h"
#include "analyze/zone_tree.h"
#include "core/feedback.h"
#include "core/status.h"

namespace recur::analyze {

enum class BreakdownBy { kName, kPath, kCategory, kThread };
// "name", "path", "cat" (or "category"), "thread".
Result<BreakdownBy> parse_breakdown_by(std::string_view text);
std::string_view breakdown_by_name(BreakdownBy by);

struct BreakdownOptions {
  Selector select = Selector::all();
  BreakdownBy by = BreakdownBy::kName;
  size_t top = 20;  // rows shown in text and Feedback (all rows are in the result)
};

struct BreakdownRow {
  // The name, path, category or thread. Path texts of deep nesting can total gigabytes: past
  // kPathTextBudget bytes of them, rows beyond the first `top` keep an empty key
  // (counted in BreakdownResult::keys_left_out).
  std::string key;
  uint64_t count = 0;
  int64_t total_ns = 0, self_ns = 0;
  int64_t mean_ns = 0, p50_ns = 0, p99_ns = 0, max_ns = 0;
  double share = 0;  // self_ns / BreakdownResult::self_total_ns
};

struct ThreadTime {
  uint32_t track = 0;
  std::string label;
  uint64_t zones = 0;
  int64_t first_ns = 0, last_ns = 0;  // first selected zone begin, last end
  int64_t busy_ns = 0, idle_ns = 0, wait_ns = 0;
};

struct BreakdownResult {
  std::vector<BreakdownRow> rows;  // by self time, largest first
  std::vector<ThreadTime> threads;  // by track
  int64_t self_total_ns = 0;
  int64_t span_ns = 0;  // first zone begin to last zone end of the whole trace
  uint64_t zones = 0;   // selected
  uint64_t keys_left_out = 0;  // rows past `top` without their (path) key text, see BreakdownRow
};

BreakdownResult analyze_breakdown(const ZoneTree& tree, const BreakdownOptions& options);

// Nearest-rank percentile (0 < p <= 100) of sorted values; 0 when empty.
int64_t nearest_rank(const std::vector<int64_t>& sorted, double p);

std::string render_breakdown(const ZoneTree& tree, const BreakdownOptions& options, const BreakdownResult& r);
// "analyze.breakdown": metrics, and the selected self time decomposed by the top rows (the
// rest as one "(N more ...)" component; unattributed 0).
Feedback breakdown_feedback(const BreakdownOptions& options, const BreakdownResult& r, std::string_view trace_name);
nlohmann::json breakdown_details(const BreakdownOptions& options, const BreakdownResult& r);

}  // namespace recur::analyze
