#include "analyze/locks.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analyze/trace_labels.h"
#include "trace/traced_mutex.h"

namespace recur::analyze {
namespace {

bool is_lock_zone(const trace::EventTable& t, const Zone& z) {
  std::string_view cat = t.cat(z.event);
  return cat == trace::kLockWaitCategory || cat == trace::kLockHeldCategory;
}

uint32_t non_lock_ancestor(const ZoneTree& tree, uint32_t z) {
  for (uint32_t p = tree.zone(z).parent; p != kNoZone; p = tree.zone(p).parent)
    if (!is_lock_zone(tree.table(), tree.zone(p))) return p;
  return kNoZone;
}

// The lock_held zones of one mutex, by begin.
struct Holds {
  std::vector<uint32_t> zones;
  // The hold covering t, on `track` if given (kNoTrack: on any track but `not_track`).
  uint32_t covering(const ZoneTree& tree, int64_t t, uint32_t track, uint32_t not_track) const {
    auto it = std::upper_bound(zones.begin(), zones.end(), t, [&](int64_t v, uint32_t z) { return v < tree.zone(z).begin; });
    // Holds of one mutex do not overlap (up to clock skew between threads): look back a little.
    for (int k = 0; k < 16 && it != zones.begin(); ++k) {
      const Zone& h = tree.zone(*--it);
      if (h.end <= t) continue;
      if (track != kNoTrack ? h.track == track : h.track != not_track) return *it;
    }
    return kNoZone;
  }
};

}  // namespace

LocksResult analyze_locks(const ZoneTree& tree, const LocksOptions& options) {
  const trace::EventTable& t = tree.table();
  LocksResult r;
  ZoneMatcher match(options.select, tree);
  std::map<std::string, MutexLocks> mutexes;
  std::map<std::string, Holds> holds;
  std::unordered_map<int64_t, std::vector<uint32_t>> tracks_by_tid;
  for (uint32_t tr = 0; tr < t.tracks().size(); ++tr) tracks_by_tid[t.tracks()[tr].tid].push_back(tr);
  for (uint32_t z = 0; z < tree.size(); ++z) {
    const Zone& zn = tree.zone(z);
    if (t.cat(zn.event) != trace::kLockHeldCategory) continue;
    std::string m = lock_mutex_name(t, zn.event);
    holds[m].zones.push_back(z);
    MutexLocks& ml = mutexes[m];
    ++ml.holds;
    ml.held_ns += zn.dur();
    ml.held_max_ns = std::max(ml.held_max_ns, zn.dur());
  }
  for (auto& [m, h] : holds) {
    std::sort(h.zones.begin(), h.zones.end(), [&](uint32_t a, uint32_t b) { return tree.zone(a).begin < tree.zone(b).begin; });
  }
  auto skip_locks = [&](const Zone& z) { return is_lock_zone(t, z); };
  using RowKey = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<std::string, std::map<RowKey, LockRow>> rows;
  for (uint32_t z = 0; z < tree.size(); ++z) {
    const Zone& zn = tree.zone(z);
    if (t.cat(zn.event) != trace::kLockWaitCategory || !match.matches(z)) continue;
    LockWait w;
    w.wait_zone = z;
    w.mutex = lock_mutex_name(t, zn.event);
    w.waiter_zone = non_lock_ancestor(tree, z);
    w.holder_tid = t.int_arg(zn.event, "holder_tid");
    if (w.holder_tid && *w.holder_tid != 0) {
      if (auto it = tracks_by_tid.find(*w.holder_tid); it != tracks_by_tid.end()) {
        int64_t pid = t.tracks()[zn.track].pid;
        w.holder_track = it->second.front();
        for (uint32_t tr : it->second)
          if (t.tracks()[tr].pid == pid) w.holder_track = tr;
      }
    }
    auto hit = holds.find(w.mutex);
    if (hit != holds.end()) {
      w.held_zone = hit->second.covering(tree, zn.begin, w.holder_track, zn.track);
      if (w.held_zone != kNoZone) w.holder_track = tree.zone(w.held_zone).track;
    }
    if (w.holder_track != kNoTrack) w.holder_zone = tree.innermost_at(w.holder_track, zn.begin, skip_locks);
    if (w.held_zone != kNoZone) w.held_in = non_lock_ancestor(tree, w.held_zone);

    MutexLocks& ml = mutexes[w.mutex];
    ml.mutex = w.mutex;
    ++ml.waits;
    ml.wait_ns += zn.dur();
    ml.wait_max_ns = std::max(ml.wait_max_ns, zn.dur());
    r.wait_ns += zn.dur();
    if (w.holder_track == kNoTrack) {
      ++r.waits_without_holder;
      r.wait_without_holder_ns += zn.dur();
    }
    RowKey key{thread_label(t, zn.track), w.waiter_zone == kNoZone ? "-" : std::string(tree.zone_path(w.waiter_zone)),
               w.holder_track == kNoTrack ? "unknown" : thread_label(t, w.holder_track),
               w.holder_zone == kNoZone ? "-" : std::string(tree.zone_path(w.holder_zone))};
    LockRow& row = rows[w.mutex][key];
    std::tie(row.waiter, row.waiter_zone, row.holder, row.holder_zone) = key;
    ++row.count;
    row.total_ns += zn.dur();
    row.max_ns = std::max(row.max_ns, zn.dur());
    r.waits.push_back(std::move(w));
  }
  for (auto& [m, ml] : mutexes) {
    ml.mutex = m;
    for (auto& [key, row] : rows[m]) ml.rows.push_back(std::move(row));
    std::stable_sort(ml.rows.begin(), ml.rows.end(), [](const LockRow& a, const LockRow& b) { return a.total_ns > b.total_ns; });
    r.mutexes.push_back(std::move(ml));
  }
  std::stable_sort(r.mutexes.begin(), r.mutexes.end(),
                   [](const MutexLocks& a, const MutexLocks& b) { return a.wait_ns > b.wait_ns; });
  return r;
}

}  // namespace recur::analyze
