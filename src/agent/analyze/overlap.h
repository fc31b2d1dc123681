// overlap A B: how much of A's busy time B overlaps, and which A intervals B never touched.
//
// Per group (grouping.h; one group by default): A's busy time is the union of the A zones'
// intervals, B's likewise; overlap = |union(A) ∩ union(B)|, reported in ns and as a share of
// |union(A)|. Every A zone of non-zero length is classified as fully, partly or never
// overlapped by union(B); the never-overlapped ones are listed, longest first, with the B zones
// just before (latest end at or before its begin) and just after (earliest begin at or after
// its end) in the same group: "KV transfer never overlapped MoE dispatch/combine".
// Pure function of the tree (thread-safe for distinct matchers).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyze/grouping.h"
#include "analyze/selector.h"
#include "analyze/zone_tree.h"
#include "core/feedback.h"

namespace recur::analyze {

struct OverlapOptions {
  Selector a = Selector::all();
  Selector b = Selector::all();
  GroupBy by = GroupBy::kAll;
  size_t max_listed = 10;  // never-overlapped A zones listed (all are counted)
};

struct NeverOverlapped {
  uint32_t zone = kNoZone;     // the A zone
  int64_t group = 0;
  uint32_t prev_b = kNoZone;   // B zone ending last at or before its begin
  uint32_t next_b = kNoZone;   // B zone beginning first at or after its end
};

struct OverlapGroup {
  int64_t key = 0;
  std::string label;
  int64_t a_busy_ns = 0, b_busy_ns = 0, overlap_ns = 0;
  size_t a_zones = 0;          // A zones of non-zero length
  size_t full_zones = 0, partial_zones = 0, never_zones = 0;
  int64_t never_ns = 0;        // |union of never-overlapped A zones|
  double share() const { return a_busy_ns > 0 ? double(overlap_ns) / double(a_busy_ns) : 0.0; }
};

struct OverlapResult {
  std::vector<OverlapGroup> groups;  // groups holding A zones, by key
  OverlapGroup total;                // sums over the groups
  std::vector<NeverOverlapped> never;  // longest first, at most max_listed
  size_t a_selected = 0, b_selected = 0;  // zones the selectors matched (any length)
};

OverlapResult analyze_overlap(const ZoneTree& tree, const OverlapOptions& options);

// For people: per group A busy, B busy, overlap (time and share of A) and zone counts, then
// the never-overlapped A zones with their B neighbours.
std::string render_overlap(const ZoneTree& tree, const OverlapOptions& options, const OverlapResult& r);
// "analyze.overlap": metrics, and A's busy time decomposed into overlapped by B, alone in
// never-overlapped zones, alone in partly overlapped zones (unattributed: 0).
Feedback overlap_feedback(const ZoneTree& tree, const OverlapOptions& options, const OverlapResult& r,
                          std::string_view trace_name);
// Every figure of the result (the JSON output's "details").
nlohmann::json overlap_details(const ZoneTree& tree, const OverlapOptions& options, const OverlapResult& r);

}  // namespace recur::analyze
