// diff BASE CAND: which zones explain the end-to-end change between two traces.
//
// The end-to-end time is the trace span (first zone begin to last zone end) or, with a root
// selector, the summed duration of the outermost root zones (e.g. every "step"). Zones in
// scope are those that begin inside the span or inside a root zone (on any track). Zones are
// aligned by zone path (zone_tree.h) and aggregated over threads, so a change of thread count
// keeps the paths comparable; the k-th occurrence of a path (by begin time) in BASE is matched
// with the k-th in CAND, and occurrences present in one trace only count fully there.
//
// A component is a path; its change is the change of its summed SELF time (a parent's own time
// without its children), so nothing is counted twice. With one thread and a root, the changes
// add up exactly to the end-to-end change; otherwise (parallel threads, time outside zones)
// the difference is the explicit `unattributed` rest.
//
// Shares: components that moved the same way as the end-to-end change (and the unattributed
// rest, when it did) share the gross change G in that direction; share = |change| / G, and the
// shares sum to 1. Components that moved the other way are offsets (share 0), O in total, and
// G - O = |end-to-end change|. Without offsets a share is simply change / end-to-end change.
// Pure function of the two trees (thread-safe).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyze/selector.h"
#include "analyze/zone_tree.h"
#include "core/feedback.h"
#include "core/status.h"

namespace recur::analyze {

struct DiffOptions {
  std::optional<Selector> root;  // end-to-end time = the root zones' total duration
  size_t top = 15;               // rows in text and Feedback (all are in the result)
};

// Offsets named in the Feedback's notes.
inline constexpr size_t kNamedOffsets = 3;

struct DiffRow {
  std::string path;  // "" past `top` when the paths' texts total more than kPathTextBudget
  uint64_t base_count = 0, cand_count = 0;
  int64_t base_self_ns = 0, cand_self_ns = 0;
  int64_t worst_delta_ns = 0;  // of the matched occurrence pair that moved most with the change
  uint64_t worst_k = 0;        // that pair's occurrence index (0-based)
  bool has_worst = false;
  double share = 0;            // of the gross change; 0 for offsets
  int64_t delta_ns() const { return cand_self_ns - base_self_ns; }
};

struct DiffThreads {
  std::vector<std::string> added, removed;  // named threads, by name ("worker x2" for repeats)
  uint64_t base_named = 0, cand_named = 0, base_unnamed = 0, cand_unnamed = 0;
};

struct DiffResult {
  std::string measure;  // "trace span" or "root 'name=step'"
  int64_t base_ns = 0, cand_ns = 0;
  uint64_t base_roots = 0, cand_roots = 0;
  std::vector<DiffRow> rows;  // every path in scope in either trace, largest |change| first
                              // (ties: path order, zone_tree.h)
  uint64_t paths_unnamed = 0;  // rows left without their path text (DiffRow::path)
  int64_t components_ns = 0;  // sum of the rows' changes
  int64_t unattributed_ns = 0;  // end-to-end change - components_ns
  int64_t gross_ns = 0, offsets_ns = 0;
  double unattributed_share = 0;
  DiffThreads threads;
  int64_t delta_ns() const { return cand_ns - base_ns; }
};

// Fails (kNotFound) when the root selector matches no zone in one of the traces.
Result<DiffResult> analyze_diff(const ZoneTree& base, const ZoneTree& cand, const DiffOptions& options);

// The same, one trace at a time: add() keeps only what the diff needs of a trace (per path,
// each occurrence's begin and self time; its threads), so the trace's table and tree can be
// freed before the next one loads. `recur analyze diff` holds one trace at a time this way:
// two traces cost the larger one, not both (issue #24: 1 GB of a real trace analyzes in at
// most 1.5x its size).
class DiffBuilder {
 public:
  explicit DiffBuilder(const DiffOptions& options);
  ~DiffBuilder();
  DiffBuilder(const DiffBuilder&) = delete;
  DiffBuilder& operator=(const DiffBuilder&) = delete;
  // BASE first, then CAND. Fails (kNotFound) when the root selector matches no zone.
  Status add(const ZoneTree& tree);
  // After both add()s.
  DiffResult finish() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

std::string render_diff(const DiffOptions& options, const DiffResult& r);
// "analyze.diff": end-to-end metrics and the decomposition (attribution_is_decomposition):
// the top components by share, the rest as one component, and `unattributed`.
Feedback diff_feedback(const DiffOptions& options, const DiffResult& r, std::string_view base_name,
                       std::string_view cand_name);
nlohmann::json diff_details(const DiffOptions& options, const DiffResult& r);

}  // namespace recur::analyze
