#include "analyze/critical_path.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "analyze/trace_labels.h"
#include "trace/traced_mutex.h"

namespace recur::analyze {
namespace {

// A dependency edge between nodes of different tracks: 16 bytes, as a long trace has millions.
struct Dep {
  uint32_t from, to;  // nodes
  uint32_t event;     // what it went through (via_text()): a flow's destination point, the
                      // lock wait or the join zone
  SegmentKind kind;   // kFlow, kLock or kJoin
};

// Memory guards (issue #24: a 1 GB trace analyzes in at most 1.5x its size; critical-path
// peaks at 1.05x): a 1 GB Kineto trace has 0.6 M dependency edges (up to one per flow point:
// 2 M) and a path of 3.1 M segments, so each byte here is megabytes there. A string per edge
// or segment (the old layout, 48 and 72 bytes) took the path to 1.5x.
static_assert(sizeof(Dep) == 16, "Dep: keep it 16 bytes (the via text is built only for the path)");
static_assert(sizeof(PathSegment) == 40, "PathSegment: keep it 40 bytes (texts go to CriticalPathResult::vias)");

// "kv_block#17", the mutex, the join zone's name: built only for the dependencies on the path.
std::string via_text(const trace::EventTable& t, const Dep& d) {
  switch (d.kind) {
    case SegmentKind::kFlow: return fmt::format("{}#{}", t.name(d.event), t.id(d.event));
    case SegmentKind::kLock: return lock_mutex_name(t, d.event);
    default: return std::string(t.name(d.event));
  }
}

// The timeline graph: nodes per track (sorted unique times) and the kind of each segment.
// About 13 bytes a node (a 1 GB trace has 10 M): the times, and per segment its kind and zone;
// a node's track is found from the per-track first nodes.
class Timeline {
 public:
  Timeline(const ZoneTree& tree, const std::vector<bool>& is_wait, const std::function<bool(const Zone&)>& ignored) {
    const trace::EventTable& t = tree.table();
    size_t tracks = t.tracks().size();
    auto is_flow_point = [&t](size_t i) {
      char ph = t.phase(i);
      return ph == 's' || ph == 't' || ph == 'f';
    };
    // Each track's times, sized exactly (no growth overshoot) and released once copied.
    std::vector<size_t> count(tracks, 0);
    for (const Zone& z : tree.zones())
      if (!ignored(z)) count[z.track] += 2;
    for (size_t i = 0; i < t.size(); ++i)
      if (is_flow_point(i)) ++count[t.track(i)];
    std::vector<std::vector<int64_t>> times(tracks);
    for (size_t tr = 0; tr < tracks; ++tr) times[tr].reserve(count[tr]);
    for (const Zone& z : tree.zones()) {
      if (ignored(z)) continue;
      times[z.track].push_back(z.begin);
      times[z.track].push_back(z.end);
    }
    for (size_t i = 0; i < t.size(); ++i)
      if (is_flow_point(i)) times[t.track(i)].push_back(t.ts_ns(i));
    size_t nodes = 0;
    for (auto& v : times) {
      std::sort(v.begin(), v.end());
      v.erase(std::unique(v.begin(), v.end()), v.end());
      nodes += v.size();
    }
    time_.reserve(nodes);
    first_.assign(tracks + 1, 0);
    for (size_t tr = 0; tr < tracks; ++tr) {
      first_[tr + 1] = first_[tr] + uint32_t(times[tr].size());
      time_.insert(time_.end(), times[tr].begin(), times[tr].end());
      std::vector<int64_t>().swap(times[tr]);
    }
    // The segment ending at node n (from node n-1 of the same track).
    seg_kind_.assign(time_.size(), SegmentKind::kIdle);
    seg_zone_.assign(time_.size(), kNoZone);
    for (uint32_t tr = 0; tr < tracks; ++tr) {
      for (uint32_t n = first_[tr] + 1; n < first_[tr + 1]; ++n) {
        uint32_t z = tree.innermost_at(tr, time_[n - 1], ignored);
        seg_zone_[n] = z;
        seg_kind_[n] = z == kNoZone ? SegmentKind::kIdle : is_wait[z] ? SegmentKind::kWait : SegmentKind::kWork;
      }
    }
  }

  size_t size() const { return time_.size(); }
  int64_t time(uint32_t n) const { return time_[n]; }
  uint32_t track(uint32_t n) const {
    return uint32_t(std::upper_bound(first_.begin(), first_.end(), n) - first_.begin()) - 1;
  }
  bool first_of_track(uint32_t n) const { return n == first_[track(n)]; }
  SegmentKind seg_kind(uint32_t n) const { return seg_kind_[n]; }
  uint32_t seg_zone(uint32_t n) const { return seg_zone_[n]; }
  // The node of `track` at time t (which must be one of its node times).
  uint32_t node(uint32_t track, int64_t t) const {
    auto b = time_.begin() + first_[track], e = time_.begin() + first_[track + 1];
    return uint32_t(std::lower_bound(b, e, t) - time_.begin());
  }
  // The track's last node, or UINT32_MAX for a track without nodes.
  uint32_t last_of(uint32_t track) const { return first_[track + 1] > first_[track] ? first_[track + 1] - 1 : UINT32_MAX; }
  size_t tracks() const { return first_.size() - 1; }

 private:
  std::vector<int64_t> time_;
  std::vector<uint32_t> first_;  // per track, its first node; then the node count
  std::vector<SegmentKind> seg_kind_;
  std::vector<uint32_t> seg_zone_;
};

using SkipFn = std::function<bool(const Zone&)>;

void add_flow_edges(const ZoneTree& tree, const Timeline& g, const SkipFn& ignored, std::vector<Dep>& deps) {
  const trace::EventTable& t = tree.table();
  // Flow points grouped by (category, name, id), in time order (s before t before f on ties).
  std::vector<uint32_t> points;
  for (size_t i = 0; i < t.size(); ++i) {
    char ph = t.phase(i);
    if ((ph == 's' || ph == 't' || ph == 'f') && (t.flags(i) & trace::kFlagHasId)) points.push_back(uint32_t(i));
  }
  auto rank = [](char ph) { return ph == 's' ? 0 : ph == 't' ? 1 : 2; };
  std::sort(points.begin(), points.end(), [&](uint32_t a, uint32_t b) {
    return std::tuple(t.cat_id(a), t.name_id(a), t.id(a), t.ts_ns(a), rank(t.phase(a)), a) <
           std::tuple(t.cat_id(b), t.name_id(b), t.id(b), t.ts_ns(b), rank(t.phase(b)), b);
  });
  for (size_t k = 0; k + 1 < points.size(); ++k) {
    uint32_t p = points[k], q = points[k + 1];
    if (t.cat_id(p) != t.cat_id(q) || t.name_id(p) != t.name_id(q) || t.id(p) != t.id(q)) continue;
    if (t.track(p) == t.track(q)) continue;  // program order already links them
    int64_t src = t.ts_ns(p), dst = t.ts_ns(q);
    if (dst < src) continue;
    // The zone the destination binds to; the edge lands on its begin when the source precedes it.
    bool next_slice = t.phase(q) == 'f' && !(t.flags(q) & trace::kFlagBindEnclosing);
    uint32_t z = next_slice ? tree.first_at_or_after(t.track(q), dst) : tree.innermost_at(t.track(q), dst, ignored);
    if (z != kNoZone && ignored(tree.zone(z))) z = kNoZone;
    int64_t land = dst;
    if (z != kNoZone && tree.zone(z).begin >= src) land = tree.zone(z).begin;
    deps.push_back({g.node(t.track(p), src), g.node(t.track(q), land), q, SegmentKind::kFlow});
  }
}

void add_lock_edges(const ZoneTree& tree, const Timeline& g, std::vector<Dep>& deps) {
  const trace::EventTable& t = tree.table();
  std::map<std::string, std::vector<uint32_t>> releases;  // lock_held zones by end, per mutex
  for (uint32_t z = 0; z < tree.size(); ++z)
    if (t.cat(tree.zone(z).event) == trace::kLockHeldCategory) releases[lock_mutex_name(t, tree.zone(z).event)].push_back(z);
  for (auto& [m, v] : releases)
    std::sort(v.begin(), v.end(), [&](uint32_t a, uint32_t b) { return tree.zone(a).end < tree.zone(b).end; });
  for (uint32_t z = 0; z < tree.size(); ++z) {
    const Zone& w = tree.zone(z);
    if (t.cat(w.event) != trace::kLockWaitCategory) continue;
    std::string m = lock_mutex_name(t, w.event);
    auto it = releases.find(m);
    if (it == releases.end()) continue;
    const auto& v = it->second;
    auto pos = std::upper_bound(v.begin(), v.end(), w.end, [&](int64_t x, uint32_t h) { return x < tree.zone(h).end; });
    while (pos != v.begin()) {
      const Zone& h = tree.zone(*--pos);
      if (h.end < w.begin) break;  // released before the wait began: not what it waited for
      if (h.track == w.track) continue;
      deps.push_back({g.node(h.track, h.end), g.node(w.track, w.end), w.event, SegmentKind::kLock});
      break;
    }
  }
}

void add_join_edges(const ZoneTree& tree, const Timeline& g, const SkipFn& ignored, const std::vector<bool>& is_join,
                    std::vector<Dep>& deps) {
  // Ends of top-level zones (a thread's units of work; its last one is the thread's end).
  std::vector<std::pair<int64_t, uint32_t>> ends;
  for (const Zone& z : tree.zones())
    if (z.parent == kNoZone && !ignored(z)) ends.push_back({z.end, z.track});
  std::sort(ends.begin(), ends.end());
  for (uint32_t z = 0; z < tree.size(); ++z) {
    if (!is_join[z]) continue;
    const Zone& j = tree.zone(z);
    auto pos = std::upper_bound(ends.begin(), ends.end(), std::pair(j.end, UINT32_MAX));
    while (pos != ends.begin()) {
      --pos;
      if (pos->first <= j.begin) break;
      if (pos->second == j.track) continue;
      deps.push_back({g.node(pos->second, pos->first), g.node(j.track, j.end), j.event, SegmentKind::kJoin});
      break;
    }
  }
}

}  // namespace

Selector default_ignore_selector() { return *Selector::parse("cat=Trace"); }

Selector default_join_selector() {
  return *Selector::parse("name~[Jj]oin|[Ss]ynchronize|[Bb]arrier|(^|[._:/ -])[Ww]ait($|[._:/ -])");
}

std::string_view segment_kind_name(SegmentKind k) {
  switch (k) {
    case SegmentKind::kWork: return "work";
    case SegmentKind::kWait: return "wait";
    case SegmentKind::kIdle: return "idle";
    case SegmentKind::kFlow: return "flow";
    case SegmentKind::kLock: return "lock";
    case SegmentKind::kJoin: return "join";
  }
  return "?";
}

Result<CriticalPathResult> analyze_critical_path(const ZoneTree& tree, const CriticalPathOptions& options) {
  const trace::EventTable& t = tree.table();
  CriticalPathResult r;
  ZoneMatcher join(options.join, tree);
  std::optional<ZoneMatcher> ignore;
  if (options.ignore) ignore.emplace(*options.ignore, tree);
  std::vector<bool> is_wait(tree.size()), is_join(tree.size()), is_ignored(tree.size());
  for (uint32_t z = 0; z < tree.size(); ++z) {
    bool lock = t.cat(tree.zone(z).event) == trace::kLockWaitCategory;
    is_ignored[z] = ignore && ignore->matches(z);
    is_join[z] = !lock && !is_ignored[z] && join.matches(z);
    is_wait[z] = lock || is_join[z];
  }
  SkipFn ignored = [&](const Zone& z) { return bool(is_ignored[&z - tree.zones().data()]); };
  Timeline g(tree, is_wait, ignored);
  if (g.size() == 0) return r;

  std::vector<Dep> deps;
  add_flow_edges(tree, g, ignored, deps);
  r.flow_edges = deps.size();
  add_lock_edges(tree, g, deps);
  r.lock_edges = deps.size() - r.flow_edges;
  add_join_edges(tree, g, ignored, is_join, deps);
  r.join_edges = deps.size() - r.flow_edges - r.lock_edges;
  // Incoming dependencies per node.
  std::sort(deps.begin(), deps.end(), [](const Dep& a, const Dep& b) { return a.to < b.to; });
  auto incoming = [&](uint32_t n) {
    auto lo = std::lower_bound(deps.begin(), deps.end(), n, [](const Dep& d, uint32_t v) { return d.to < v; });
    auto hi = std::upper_bound(lo, deps.end(), n, [](uint32_t v, const Dep& d) { return v < d.to; });
    return std::pair(lo, hi);
  };

  // The end: the latest node (or the end of the latest selected zone); on ties, one whose
  // thread was working up to it.
  uint32_t end = UINT32_MAX;
  auto consider = [&](uint32_t n) {
    if (end == UINT32_MAX || g.time(n) > g.time(end) ||
        (g.time(n) == g.time(end) && g.seg_kind(n) == SegmentKind::kWork && g.seg_kind(end) != SegmentKind::kWork))
      end = n;
  };
  if (options.end) {
    ZoneMatcher match(*options.end, tree);
    for (uint32_t z = 0; z < tree.size(); ++z)
      if (!is_ignored[z] && match.matches(z)) consider(g.node(tree.zone(z).track, tree.zone(z).end));
    if (end == UINT32_MAX) {
      return not_found("critical path: end '{}' selects no zone ({} zones in the trace)", options.end->text(), tree.size());
    }
  } else {
    for (uint32_t tr = 0; tr < g.tracks(); ++tr)
      if (uint32_t n = g.last_of(tr); n != UINT32_MAX) consider(n);
  }
  r.end = g.time(end);
  r.end_track = g.track(end);

  // Walk back from the end, merging adjacent pieces of the same zone (split by flow points or
  // children that were not on the path) as they come; reversed into time order below. One
  // vector: the path of a long trace runs to millions of segments.
  std::vector<PathSegment>& back = r.segments;
  auto add = [&back](const PathSegment& s) {
    if (!back.empty()) {
      PathSegment& later = back.back();
      if (!is_dependency(s.kind) && later.kind == s.kind && later.track == s.track && later.zone == s.zone &&
          s.end == later.begin) {
        later.begin = s.begin;
        return;
      }
    }
    back.push_back(s);
  };
  std::vector<bool> visited(g.size(), false);
  uint32_t n = end;
  for (;;) {
    bool blocked = g.first_of_track(n) || g.seg_kind(n) != SegmentKind::kWork;
    const Dep* follow = nullptr;
    if (blocked && !visited[n]) {
      auto [lo, hi] = incoming(n);
      for (auto it = lo; it != hi; ++it) {
        bool explicit_dep = it->kind != SegmentKind::kJoin;
        if (follow == nullptr) {
          follow = &*it;
          continue;
        }
        bool follow_explicit = follow->kind != SegmentKind::kJoin;
        if (explicit_dep != follow_explicit) {
          if (explicit_dep) follow = &*it;
        } else if (g.time(it->from) > g.time(follow->from)) {
          follow = &*it;
        }
      }
    }
    visited[n] = true;
    if (follow != nullptr) {
      PathSegment s;
      s.kind = follow->kind;
      s.track = g.track(n);
      s.from_track = g.track(follow->from);
      s.begin = g.time(follow->from);
      s.end = g.time(n);
      s.via = uint32_t(r.vias.size());
      r.vias.push_back(via_text(t, *follow));
      add(s);
      n = follow->from;
      continue;
    }
    if (g.first_of_track(n)) break;
    PathSegment s;
    s.kind = g.seg_kind(n);
    s.track = g.track(n);
    s.from_track = s.track;
    s.begin = g.time(n - 1);
    s.end = g.time(n);
    s.zone = g.seg_zone(n);
    add(s);
    --n;
  }
  // Leading idle time is not part of the path: it starts with the first thing that happened.
  while (!back.empty() && back.back().kind == SegmentKind::kIdle) back.pop_back();
  r.begin = back.empty() ? r.end : back.back().begin;
  std::reverse(back.begin(), back.end());

  // Components keyed by kind and path id; texts are built once the order is known, and past
  // kPathTextBudget bytes only for the rows shown (paths nested thousands deep total GBs).
  struct Key {
    int group;  // 0 "(dependency latency)", 1 "(idle)", 2 a zone path, 3 "wait: <path>"
    uint32_t path;
    bool operator<(const Key& o) const { return group != o.group ? group < o.group : path < o.path; }
  };
  std::map<Key, PathComponent> components;
  std::map<uint32_t, int64_t> per_track;
  for (const PathSegment& s : r.segments) {
    Key key{0, 0};
    switch (s.kind) {
      case SegmentKind::kWork:
        r.work_ns += s.dur();
        key = {2, tree.zone(s.zone).path};
        break;
      case SegmentKind::kWait:
        r.wait_ns += s.dur();
        key = {3, tree.zone(s.zone).path};
        break;
      case SegmentKind::kIdle:
        r.idle_ns += s.dur();
        key = {1, 0};
        break;
      case SegmentKind::kFlow:
      case SegmentKind::kLock:
      case SegmentKind::kJoin:
        r.latency_ns += s.dur();
        key = {0, 0};
        ++(s.kind == SegmentKind::kFlow ? r.flow_used : s.kind == SegmentKind::kLock ? r.lock_used : r.join_used);
        break;
    }
    if (!is_dependency(s.kind)) per_track[s.track] += s.dur();
    PathComponent& c = components[key];
    c.ns += s.dur();
    ++c.segments;
  }
  int64_t len = r.length_ns();
  std::vector<uint32_t> rank = components.size() > 2 ? tree.path_order() : std::vector<uint32_t>();
  std::vector<std::pair<Key, PathComponent>> ordered(components.begin(), components.end());
  std::stable_sort(ordered.begin(), ordered.end(), [&](const auto& a, const auto& b) {
    if (a.second.ns != b.second.ns) return a.second.ns > b.second.ns;
    if (a.first.group != b.first.group) return a.first.group < b.first.group;
    return a.first.group >= 2 && rank[a.first.path] < rank[b.first.path];
  });
  uint64_t text_bytes = 0;
  for (const auto& [key, c] : ordered) text_bytes += key.group >= 2 ? tree.path_length(key.path) + 6 : 20;
  for (auto& [key, c] : ordered) {
    c.share = len > 0 ? double(c.ns) / double(len) : 0.0;
    bool named = text_bytes <= kPathTextBudget || r.components.size() < options.top;
    switch (key.group) {
      case 0: c.component = "(dependency latency)"; break;
      case 1: c.component = "(idle)"; break;
      default:
        if (named) {
          c.component = (key.group == 3 ? "wait: " : "") + tree.path(key.path);
        } else {
          ++r.components_unnamed;
        }
    }
    r.components.push_back(std::move(c));
  }
  for (auto [tr, ns] : per_track) r.threads.push_back({tr, ns});
  std::stable_sort(r.threads.begin(), r.threads.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return r;
}

}  // namespace recur::analyze
