#include "analyze/overlap.h"

#include <algorithm>
#include <map>

#include "analyze/interval_set.h"

namespace recur::analyze {
namespace {

struct GroupZones {
  std::vector<uint32_t> a, b;
};

// B zones of one group, for "just before" / "just after" look-ups.
class Neighbours {
 public:
  Neighbours(const ZoneTree& tree, std::vector<uint32_t> b) : tree_(tree), by_begin_(std::move(b)) {
    by_end_ = by_begin_;
    std::sort(by_begin_.begin(), by_begin_.end(),
              [&](uint32_t x, uint32_t y) { return tree_.zone(x).begin < tree_.zone(y).begin; });
    std::sort(by_end_.begin(), by_end_.end(), [&](uint32_t x, uint32_t y) { return tree_.zone(x).end < tree_.zone(y).end; });
  }
  uint32_t before(int64_t t) const {
    auto it = std::upper_bound(by_end_.begin(), by_end_.end(), t,
                               [&](int64_t v, uint32_t z) { return v < tree_.zone(z).end; });
    return it == by_end_.begin() ? kNoZone : *(it - 1);
  }
  uint32_t after(int64_t t) const {
    auto it = std::lower_bound(by_begin_.begin(), by_begin_.end(), t,
                               [&](uint32_t z, int64_t v) { return tree_.zone(z).begin < v; });
    return it == by_begin_.end() ? kNoZone : *it;
  }

 private:
  const ZoneTree& tree_;
  std::vector<uint32_t> by_begin_, by_end_;
};

IntervalSet union_of(const ZoneTree& tree, const std::vector<uint32_t>& zones) {
  std::vector<Interval> v;
  v.reserve(zones.size());
  for (uint32_t z : zones) v.push_back({tree.zone(z).begin, tree.zone(z).end});
  return IntervalSet(std::move(v));
}

}  // namespace

OverlapResult analyze_overlap(const ZoneTree& tree, const OverlapOptions& options) {
  OverlapResult r;
  ZoneMatcher match_a(options.a, tree), match_b(options.b, tree);
  std::map<int64_t, GroupZones> groups;
  for (uint32_t z = 0; z < tree.size(); ++z) {
    bool in_a = match_a.matches(z), in_b = match_b.matches(z);
    if (!in_a && !in_b) continue;
    GroupZones& g = groups[group_key(tree, z, options.by)];
    if (in_a) {
      ++r.a_selected;
      if (tree.zone(z).dur() > 0) g.a.push_back(z);
    }
    if (in_b) {
      ++r.b_selected;
      if (tree.zone(z).dur() > 0) g.b.push_back(z);
    }
  }
  std::vector<NeverOverlapped> never;
  r.total.label = "total";
  for (auto& [key, zones] : groups) {
    IntervalSet a = union_of(tree, zones.a), b = union_of(tree, zones.b);
    r.total.b_busy_ns += b.length();
    if (zones.a.empty()) continue;
    OverlapGroup g;
    g.key = key;
    g.label = group_label(tree.table(), options.by, key);
    g.a_busy_ns = a.length();
    g.b_busy_ns = b.length();
    g.overlap_ns = a.intersect(b).length();
    g.a_zones = zones.a.size();
    Neighbours near(tree, zones.b);
    IntervalSet never_time;
    for (uint32_t z : zones.a) {
      const Zone& zn = tree.zone(z);
      int64_t covered = b.overlap_length({zn.begin, zn.end});
      if (covered == zn.dur()) {
        ++g.full_zones;
      } else if (covered > 0) {
        ++g.partial_zones;
      } else {
        ++g.never_zones;
        never_time.add(zn.begin, zn.end);
        never.push_back({z, key, near.before(zn.begin), near.after(zn.end)});
      }
    }
    g.never_ns = never_time.length();
    r.total.a_busy_ns += g.a_busy_ns;
    r.total.overlap_ns += g.overlap_ns;
    r.total.a_zones += g.a_zones;
    r.total.full_zones += g.full_zones;
    r.total.partial_zones += g.partial_zones;
    r.total.never_zones += g.never_zones;
    r.total.never_ns += g.never_ns;
    r.groups.push_back(std::move(g));
  }
  std::stable_sort(never.begin(), never.end(), [&](const NeverOverlapped& x, const NeverOverlapped& y) {
    return tree.zone(x.zone).dur() > tree.zone(y.zone).dur();
  });
  if (never.size() > options.max_listed) never.resize(options.max_listed);
  r.never = std::move(never);
  return r;
}

}  // namespace recur::analyze
