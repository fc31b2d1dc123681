// critical-path: the chain of work and dependencies that determined when the trace's last
// event ended, over every thread of the trace.
//
// The dependency graph. Nodes are the zone begins and ends and flow points of each track.
// Edges: program order between consecutive nodes of a track (a segment: work inside its
// innermost zone, a wait inside a wait zone, or idle outside every zone); and dependencies
// between tracks:
//   flow  s -> t -> f (consecutive points of one flow: same category, name and id), from the
//         point's time to the zone the next point binds to (the enclosing zone, or for an `f`
//         without "bp":"e" the next zone): to that zone's begin when the source precedes it,
//         else to the point itself;
//   lock  the release (lock_held end) of the same mutex on another track that came last
//         before a lock_wait zone ended -> that wait's end (the acquire);
//   join  a zone the join selector matches (default: names with join, Join, synchronize,
//         Synchronize, wait, Wait) waited for the other thread that finished last while it
//         waited: the latest end of a top-level zone on another track inside (begin, end] of
//         the join zone -> its end. A thread's last event is its last top-level zone's end,
//         so a join that outlasts a thread links to that thread's end.
// Lock waits and join zones are wait zones. Zones the ignore selector matches (default: Kineto's
// whole-recording span, cat=Trace) are left out, as if they were not in the trace.
//
// The path is the longest one ending at the trace's last event (the latest zone end; or the
// latest end of a zone the `end` selector picks, e.g. a training step, since a trace's very last
// event may be a watchdog's poll) in this
// graph when a thread that was blocked at a node — its segment before the node is a wait or
// idle, or it has none — could only continue when a dependency arrived: walking back from the
// end, a blocked node follows the dependency that arrived last (flows and locks before
// joins), and a running one (work before the node) follows its own thread. The path's length
// is its end minus its begin and splits exactly into work per zone, waits with no known cause,
// idle time and dependency latency (source to destination time of the edges it took).
// Pure function of the tree.
#pragma once

#include <cstdint>
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

// name~join|Join|synchronize|Synchronize|wait|Wait
Selector default_join_selector();

// cat=Trace: Kineto's "PyTorch Profiler (N)" span, which covers the whole recording.
Selector default_ignore_selector();

struct CriticalPathOptions {
  Selector join = default_join_selector();
  std::optional<Selector> ignore = default_ignore_selector();  // zones left out of the graph
  // The path ends at the latest end of a zone this selects (e.g. name~^ProfilerStep); default:
  // the trace's last event.
  std::optional<Selector> end;
  size_t top = 15;           // components in text and Feedback
  size_t max_segments = 40;  // path segments listed in text (the longest, in time order)
};

enum class SegmentKind : uint8_t { kWork, kWait, kIdle, kFlow, kLock, kJoin };
std::string_view segment_kind_name(SegmentKind k);
inline bool is_dependency(SegmentKind k) { return k >= SegmentKind::kFlow; }

// One piece of the path. A path through a long trace has millions of them (3 M for a 1 GB
// Kineto trace), so a segment is 40 bytes: the dependency's text lives in the result's `vias`.
struct PathSegment {
  int64_t begin = 0, end = 0;  // a dependency: source time to destination time
  uint32_t track = 0;          // where the time passed (a dependency: its destination)
  uint32_t from_track = 0;     // a dependency: its source
  uint32_t zone = kNoZone;     // work: the innermost zone; wait: the wait zone
  uint32_t via = 0;            // a dependency: index into CriticalPathResult::vias; else 0 ("")
  SegmentKind kind = SegmentKind::kIdle;
  int64_t dur() const { return end - begin; }
};

struct PathComponent {
  std::string component;  // a zone path; "wait: <path>"; "(dependency latency)"; "(idle)"
  int64_t ns = 0;
  uint64_t segments = 0;
  double share = 0;       // of the path length
};

struct CriticalPathResult {
  int64_t begin = 0, end = 0;
  uint32_t end_track = 0;
  int64_t work_ns = 0, wait_ns = 0, idle_ns = 0, latency_ns = 0;
  std::vector<PathSegment> segments;     // in time order; adjacent pieces of one zone merged
  // What each dependency on the path went through: "kv_block#17", the mutex, the join zone's
  // name. vias[0] is "" (the segments that are not dependencies).
  std::vector<std::string> vias{std::string()};
  std::string_view via(const PathSegment& s) const { return vias[s.via]; }
  std::vector<PathComponent> components;  // largest first (ties: path order, zone_tree.h)
  // Components past `top` left without their text (component ""): paths nested so deep that
  // their texts total more than kPathTextBudget.
  uint64_t components_unnamed = 0;
  std::vector<std::pair<uint32_t, int64_t>> threads;  // time on the path per track, largest first
  size_t flow_edges = 0, lock_edges = 0, join_edges = 0;  // dependency edges in the graph
  size_t flow_used = 0, lock_used = 0, join_used = 0;     // on the path
  int64_t length_ns() const { return end - begin; }
};

// Fails (kNotFound) when the end selector matches no zone.
Result<CriticalPathResult> analyze_critical_path(const ZoneTree& tree, const CriticalPathOptions& options);

std::string render_critical_path(const ZoneTree& tree, const CriticalPathOptions& options, const CriticalPathResult& r);
// "analyze.critical-path": path metrics, and its length decomposed into work per zone path,
// waits, dependency latency (attribution_is_decomposition); idle time is `unattributed`.
Feedback critical_path_feedback(const ZoneTree& tree, const CriticalPathOptions& options, const CriticalPathResult& r,
                                std::string_view trace_name);
nlohmann::json critical_path_details(const ZoneTree& tree, const CriticalPathResult& r);

}  // namespace recur::analyze
