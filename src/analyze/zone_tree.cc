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
    if (nests) open.push_back(z);
    if (z == 0 || zn.begin < first_begin_) first_begin_ = zn.begin;
    if (z == 0 || zn.end > last_end_) last_end_ = zn.end;
  }
}

void ZoneTree::assign_paths() {
  const trace::EventTable& t = *table_;
  paths_.push_back({"", 0});  // path 0: the root, parent of every top-level path
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
      std::string seg = key.number == kNoNumber ? std::string(base) : fmt::format("{}.{}", base, key.number);
      std::string text = parent_path == 0 ? seg : paths_[parent_path].text + "/" + seg;
      paths_.push_back({std::move(text), parent_path});
    }
    z.path = it->second;
  }
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
  while (z != kNoZone) {
    const Zone& zn = zones_[z];
    if (zn.begin <= t && t < zn.end && !(skip && skip(zn))) return z;
    z = zn.parent;
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
