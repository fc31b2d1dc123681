// ZoneTree: the nesting of a trace's complete ('X') events, per track, and the zone paths the
// analyses group and align by.
//
// A zone's parent is the innermost zone on the same track that encloses it (begin <= child
// begin, child end <= end). Zones are ordered per track by begin, longer first on ties, so a
// parent precedes its children; a zero-length zone encloses nothing, and a zone that starts
// where another ends is its sibling, not its child (half-open intervals). Zones that overlap
// an open zone without nesting in it (GPU streams, µs rounding in foreign traces) become
// children of the innermost zone that does enclose them and never parents; they are counted
// in non_nesting().
//
// A zone's path is its ancestors' segments and its own, joined by '/': "step/layer.7/attention".
// A segment is the zone's name, plus ".N" when the zone has an integer arg keyed by its own
// name (the engine's zone "layer" with arg layer=7 is "layer.7"); a trailing "#<digits>" is
// dropped (Kineto's ProfilerStep#552 is "ProfilerStep"), so repeated steps share a path and
// traces with other step numbers align (diff tells repeats apart by order). Self time is the zone's
// duration minus the part its children cover.
//
// Paths are interned as (parent path, segment) pairs, never stored as text: a trace nested
// 20,000 deep has 20,000 distinct paths whose texts together run to gigabytes (issue #24), so
// path() builds a text only when asked, and path_ends_with() / path_order() answer from the
// segments. Memory is linear in zones and distinct paths.
//
// Built once per table (O(n log n)); immutable afterwards, so const methods are thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "trace/event_table.h"

namespace recur::analyze {

inline constexpr uint32_t kNoZone = UINT32_MAX;
// Path texts an analysis builds for its full (--json) output at most; past it, only the rows
// it shows (`--top`) are named. 20,000 nested zones have paths totalling 400 MB+ of text.
inline constexpr uint64_t kPathTextBudget = uint64_t(64) << 20;

struct Zone {
  uint32_t event = 0;       // row in the EventTable
  uint32_t track = 0;
  uint32_t parent = kNoZone;
  uint32_t depth = 0;       // 0 for a root zone
  uint32_t path = 0;        // index into ZoneTree::path()
  int64_t begin = 0, end = 0;
  int64_t self_ns = 0;      // duration minus the union of its children's time
  int64_t dur() const { return end - begin; }
};
// One per complete event: 3.8 M in a 1 GB Kineto trace, a quarter of what an analysis holds
// (issue #24: a 1 GB trace analyzes in at most 1.5x its size).
static_assert(sizeof(Zone) == 48, "Zone: keep it 48 bytes; a larger zone grows every analysis");

class ZoneTree {
 public:
  explicit ZoneTree(const trace::EventTable& table);

  const trace::EventTable& table() const { return *table_; }
  // Zones grouped by track (ascending), each track's zones by begin, longer first on ties.
  const std::vector<Zone>& zones() const { return zones_; }
  const Zone& zone(uint32_t z) const { return zones_[z]; }
  size_t size() const { return zones_.size(); }
  // Zones of one track: indices [track_first(t), track_last(t)).
  uint32_t track_first(uint32_t track) const { return track_begin_[track]; }
  uint32_t track_last(uint32_t track) const { return track_begin_[track + 1]; }
  // The zone of an X event, or kNoZone for other events.
  uint32_t zone_of_event(size_t event) const { return event_zone_[event]; }

  // The path's text, built on each call (O(its length)): "step/layer.7/attention".
  std::string path(uint32_t path_id) const;
  size_t path_count() const { return paths_.size(); }
  // The path of a zone's parent ("" for a root zone): path ids form a tree too.
  uint32_t path_parent(uint32_t path_id) const { return paths_[path_id].parent; }
  // The last segment of a path ("attention"), its depth in segments (0 for the root path "")
  // and the length of its text.
  std::string_view path_segment(uint32_t path_id) const { return paths_[path_id].segment; }
  uint32_t path_depth(uint32_t path_id) const { return paths_[path_id].depth; }
  uint64_t path_length(uint32_t path_id) const { return paths_[path_id].length; }
  // True when the path's text is `text` or ends in "/" + `text` (whole segments, as the
  // selector's path=... means): O(text.size()), no path text built.
  bool path_ends_with(uint32_t path_id, std::string_view text) const;
  // Every path's rank in path order: segment by segment from the root, each segment compared
  // as text, a path before its extensions. O(paths log paths), no path texts built.
  std::vector<uint32_t> path_order() const;
  // The path's text when it is at most max_bytes long; else ".../" and as many of its last
  // whole segments as fit (for per-zone details: one deep zone's path can be a megabyte).
  std::string path_tail(uint32_t path_id, size_t max_bytes) const;
  // The zone's path text.
  std::string zone_path(uint32_t z) const { return path(zones_[z].path); }

  // The innermost zone on `track` that covers time t (begin <= t < end), skipping zones for
  // which `skip` returns true (their ancestors are tried instead); kNoZone if none. O(log depth)
  // plus the skipped zones (jump pointers over ancestors, not a walk up the parent chain).
  uint32_t innermost_at(uint32_t track, int64_t t,
                        const std::function<bool(const Zone&)>& skip = nullptr) const;
  // The first zone on `track` that begins at or after t, or kNoZone.
  uint32_t first_at_or_after(uint32_t track, int64_t t) const;

  // Earliest zone begin and latest zone end ({0, 0} without zones).
  int64_t first_begin() const { return first_begin_; }
  int64_t last_end() const { return last_end_; }
  int64_t span_ns() const { return last_end_ - first_begin_; }

  // Zones that overlapped an open zone without nesting in it.
  size_t non_nesting() const { return non_nesting_; }

 private:
  struct Path {
    std::string segment;  // "" for the root path
    uint32_t parent = 0;
    uint32_t depth = 0;
    uint64_t length = 0;  // of the whole text
  };
  void build_tracks();
  void assign_paths();

  const trace::EventTable* table_;
  std::vector<Zone> zones_;
  // Per zone: an ancestor (Myers' skew-binary jump pointers): climbing to the first ancestor
  // that covers a time takes O(log depth) steps.
  std::vector<uint32_t> jump_;
  std::vector<uint32_t> track_begin_;  // size tracks + 1
  std::vector<uint32_t> event_zone_;
  std::vector<Path> paths_;
  size_t non_nesting_ = 0;
  int64_t first_begin_ = 0, last_end_ = 0;
};

// Path order over any tree of segments (ZoneTree's paths, or paths joined across two trees):
// node 0 is the root and every other node's parent has a smaller index. Returns each node's
// rank: depth first, siblings by segment text. O(n log n); no texts joined.
std::vector<uint32_t> segment_tree_order(const std::vector<uint32_t>& parent, const std::vector<std::string_view>& segment);

// "name" or "name.N" (see above): the path segment of event i.
std::string zone_segment(const trace::EventTable& table, size_t event);

}  // namespace recur::analyze
