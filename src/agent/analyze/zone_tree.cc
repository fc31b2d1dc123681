#include "analyze/zone_tree.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include <fmt/format.h>

namespace recur::analyze {
namespace {

constexpr int64_t kNoNumber = std::numeric_limits<int64_t>::min();

// The ".N" of a segment: an integer arg keyed by the zone's own name.
int64_t segment_number(const trace::EventTable& t, size_t i) {
  std::string_view name = t.name(i);
  if (name.empty()) return kNoNumber;
  for (size_t k = t.args_begin(i); k < t.args_end(i); ++k) {
    const trace::Arg& a = t.arg(k);
    if (a.type == trace::ArgType::kInt && t.str(a.key) == name) return a.i;
  }
  return kNoNumber;
}

// The name without a trailing "#<digits>" (Kineto's ProfilerStep#552).
std::string_view base_name(std::string_view name) {
  size_t k = name.size();
  while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9') --k;
  if (k < name.size() && k > 1 && name[k - 1] == '#') return name.substr(0, k - 1);
  return name;
}

struct PathKey {
  uint32_t parent;
  uint32_t base;  // index of the base name
  int64_t number;
  bool operator==(const PathKey&) const = default;
};
struct PathKeyHash {
  size_t operator()(const PathKey& k) const noexcept {
    uint64_t h = (uint64_t(k.parent) << 32 | k.base) * 0x9E3779B97F4A7C15ull;
    return size_t(h ^ (uint64_t(k.number) * 0xC2B2AE3D27D4EB4Full) ^ (h >> 29));
  }
};

}  // namespace

std::string zone_segment(const trace::EventTable& table, size_t event) {
  int64_t n = segment_number(table, event);
  std::string_view name = base_name(table.name(event));
  if (n == kNoNumber) return std::string(name);
  return fmt::format("{}.{}", name, n);
}

ZoneTree::ZoneTree(const trace::EventTable& table) : table_(&table) {
  build_tracks();
  assign_paths();
}

void ZoneTree::build_tracks() {
  const trace::EventTable& t = *table_;
  event_zone_.assign(t.size(), kNoZone);
  std::vector<uint32_t> order;
  for (size_t i = 0; i < t.size(); ++i)
    if (t.phase(i) == 'X') order.push_back(uint32_t(i));
  // Per track by begin, longer first, then file order: a parent precedes its children.
  std::sort(order.begin(), order.end(), [&t](uint32_t a, uint32_t b) {
    if (t.track(a) != t.track(b)) return t.track(a) < t.track(b);
    if (t.ts_ns(a) != t.ts_ns(b)) return t.ts_ns(a) < t.ts_ns(b);
    if (t.dur_ns(a) != t.dur_ns(b)) return t.dur_ns(a) > t.dur_ns(b);
    return a < b;
  });
  zones_.resize(order.size());
  jump_.assign(order.size(), kNoZone);
  track_begin_.assign(t.tracks().size() + 1, 0);
  for (uint32_t e : order) ++track_begin_[t.track(e) + 1];
  for (size_t k = 1; k < track_begin_.size(); ++k) track_begin_[k] += track_begin_[k - 1];

  std::vector<uint32_t> open;          // enclosing zones of the current one, outermost first
  // Per zone: the latest time its children cover so far (children come in begin order, so
  // self time needs no per-parent interval set).
  std::vector<int64_t> covered_end(order.size(), 0);
  uint32_t prev_track = UINT32_MAX;
  for (uint32_t z = 0; z < order.size(); ++z) {
    uint32_t e = order[z];
    Zone& zn = zones_[z];
    zn.event = e;
    zn.track = t.track(e);
    zn.begin = t.ts_ns(e);
    zn.end = zn.begin + t.dur_ns(e);
    zn.self_ns = zn.dur();
    event_zone_[e] = z;
    covered_end[z] = zn.begin;
    if (zn.track != prev_track) open.clear();
    prev_track = zn.track;
    while (!open.empty() && zones_[open.back()].end <= zn.begin) open.pop_back();
    // Skip open zones this one outlives (it overlaps them without nesting).
    size_t depth = open.size();
    while (depth > 0 && zones_[open[depth - 1]].end < zn.end) --depth;
    bool nests = depth == open.size();
    if (!nests) ++non_nesting_;
    if (depth > 0) {
      uint32_t p = open[depth - 1];
      Zone& parent = zones_[p];
      zn.parent = p;
      zn.depth = parent.depth + 1;
      int64_t from = std::max(zn.begin, covered_end[p]);
      int64_t to = std::min(zn.end, parent.end);
      if (to > from) parent.self_ns -= to - from;
      covered_end[p] = std::max(covered_end[p], to);
    }
    // Jump pointer: the parent's jump's jump when the two jumps below have equal length, else
    // the parent (skew-binary: any ancestor is reached in O(log depth) jumps).
    uint32_t jump = kNoZone;
    if (zn.parent != kNoZone) {
      uint32_t p = zn.parent, pj = jump_[p];
      uint32_t pjj = pj == kNoZone ? kNoZone : jump_[pj];
      bool equal = pj != kNoZone && pjj != kNoZone &&
                   zones_[p].depth - zones_[pj].depth == zones_[pj].depth - zones_[pjj].depth;
      jump = equal ? pjj : p;
    }
    jump_[z] = jump;
    if (nests) open.push_back(z);
    if (z == 0 || zn.begin < first_begin_) first_begin_ = zn.begin;
    if (z == 0 || zn.end > last_end_) last_end_ = zn.end;
  }
}

void ZoneTree::assign_paths() {
  const trace::EventTable& t = *table_;
  paths_.push_back({});  // path 0: the root "", parent of every top-level path
  std::unordered_map<PathKey, uint32_t, PathKeyHash> index;
  // Base names: per name id, the index of its base name (names that differ only in "#N" share one).
  std::unordered_map<trace::StringId, uint32_t> base_of_name;
  std::unordered_map<std::string_view, uint32_t> base_index;
  std::vector<std::string_view> bases;
  // Parents precede children within a track, so a parent's path is known first.
  for (Zone& z : zones_) {
    uint32_t parent_path = z.parent == kNoZone ? 0 : zones_[z.parent].path;
    auto [b, new_name] = base_of_name.try_emplace(t.name_id(z.event), 0);
    if (new_name) {
      std::string_view base = base_name(t.name(z.event));
      auto [bi, new_base] = base_index.try_emplace(base, uint32_t(bases.size()));
      if (new_base) bases.push_back(base);
      b->second = bi->second;
    }
    PathKey key{parent_path, b->second, segment_number(t, z.event)};
    auto [it, added] = index.try_emplace(key, uint32_t(paths_.size()));
    if (added) {
      std::string_view base = bases[key.base];
      Path p;
      p.segment = key.number == kNoNumber ? std::string(base) : fmt::format("{}.{}", base, key.number);
      p.parent = parent_path;
      p.depth = paths_[parent_path].depth + 1;
      p.length = (parent_path == 0 ? 0 : paths_[parent_path].length + 1) + p.segment.size();
      paths_.push_back(std::move(p));
    }
    z.path = it->second;
  }
}

std::string ZoneTree::path(uint32_t path_id) const {
  std::string text(paths_[path_id].length, '/');
  for (uint32_t p = path_id; p != 0; p = paths_[p].parent) {
    const Path& pp = paths_[p];
    text.replace(pp.length - pp.segment.size(), pp.segment.size(), pp.segment);
  }
  return text;
}

std::string ZoneTree::path_tail(uint32_t path_id, size_t max_bytes) const {
  if (paths_[path_id].length <= max_bytes) return path(path_id);
  // The highest ancestor whose segment and those below it still fit after ".../".
  uint64_t end = paths_[path_id].length;
  auto start_of = [this](uint32_t p) { return paths_[p].length - paths_[p].segment.size(); };
  uint32_t cut = path_id;
  while (paths_[cut].parent != 0 && end - start_of(paths_[cut].parent) + 4 <= max_bytes) cut = paths_[cut].parent;
  uint64_t from = start_of(cut);
  std::string text(end - from + 4, '/');
  text.replace(0, 3, "...");
  for (uint32_t p = path_id;; p = paths_[p].parent) {
    const Path& pp = paths_[p];
    text.replace(4 + pp.length - pp.segment.size() - from, pp.segment.size(), pp.segment);
    if (p == cut) break;
  }
  return text;
}

bool ZoneTree::path_ends_with(uint32_t path_id, std::string_view text) const {
  // Compares `text` with the path's text from the end, one segment at a time; `pos` is how
  // much of `text` is still unmatched.
  size_t pos = text.size();
  for (uint32_t p = path_id; p != 0; p = paths_[p].parent) {
    std::string_view seg = paths_[p].segment;
    if (pos <= seg.size()) {
      // The rest of `text` ends this segment, at the path's start or after a '/'.
      if (!seg.ends_with(text.substr(0, pos))) return false;
      size_t before = seg.size() - pos;
      return before == 0 || seg[before - 1] == '/';
    }
    if (text.substr(pos - seg.size(), seg.size()) != seg || text[pos - seg.size() - 1] != '/') return false;
    pos -= seg.size() + 1;
  }
  return false;
}

std::vector<uint32_t> segment_tree_order(const std::vector<uint32_t>& parent, const std::vector<std::string_view>& segment) {
  std::vector<std::vector<uint32_t>> children(parent.size());
  for (uint32_t p = 1; p < parent.size(); ++p) children[parent[p]].push_back(p);
  std::vector<uint32_t> rank(parent.size(), 0);
  uint32_t next = 0;
  std::vector<uint32_t> stack{0};  // iterative: paths may nest 10^5 deep
  while (!stack.empty()) {
    uint32_t p = stack.back();
    stack.pop_back();
    rank[p] = next++;
    std::vector<uint32_t>& c = children[p];
    std::sort(c.begin(), c.end(), [&segment](uint32_t a, uint32_t b) { return segment[a] > segment[b]; });
    stack.insert(stack.end(), c.begin(), c.end());  // reversed: the smallest segment is popped first
  }
  return rank;
}

std::vector<uint32_t> ZoneTree::path_order() const {
  std::vector<uint32_t> parent(paths_.size());
  std::vector<std::string_view> segment(paths_.size());
  for (uint32_t p = 0; p < paths_.size(); ++p) {
    parent[p] = paths_[p].parent;
    segment[p] = paths_[p].segment;
  }
  return segment_tree_order(parent, segment);
}

uint32_t ZoneTree::innermost_at(uint32_t track, int64_t t,
                                const std::function<bool(const Zone&)>& skip) const {
  if (track + 1 >= track_begin_.size()) return kNoZone;
  auto first = zones_.begin() + track_begin_[track];
  auto last = zones_.begin() + track_begin_[track + 1];
  // The last zone beginning at or before t; under nesting, any zone covering t is it or one
  // of its ancestors.
  auto it = std::upper_bound(first, last, t, [](int64_t v, const Zone& z) { return v < z.begin; });
  if (it == first) return kNoZone;
  uint32_t z = uint32_t(it - zones_.begin() - 1);
  // Every ancestor begins at or before t, and ends are non-decreasing going up (a parent
  // encloses its children): the covering ancestors are those with end > t, a run from some
  // ancestor up to the root. Jump to the lowest of them, then skip upwards.
  while (z != kNoZone) {
    if (t < zones_[z].end) {
      if (!(skip && skip(zones_[z]))) return z;
      z = zones_[z].parent;
      continue;
    }
    uint32_t j = jump_[z];
    z = j != kNoZone && zones_[j].end <= t ? j : zones_[z].parent;
  }
  return kNoZone;
}

uint32_t ZoneTree::first_at_or_after(uint32_t track, int64_t t) const {
  if (track + 1 >= track_begin_.size()) return kNoZone;
  auto first = zones_.begin() + track_begin_[track];
  auto last = zones_.begin() + track_begin_[track + 1];
  auto it = std::lower_bound(first, last, t, [](const Zone& z, int64_t v) { return z.begin < v; });
  return it == last ? kNoZone : uint32_t(it - zones_.begin());
}

}  // namespace recur::analyze
