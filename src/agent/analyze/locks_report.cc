// Text, Feedback and JSON forms of a LocksResult.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "analyze/locks.h"
#include "analyze/report_util.h"
#include "analyze/text_table.h"
#include "analyze/trace_labels.h"

namespace recur::analyze {

using nlohmann::json;

std::string render_locks(const LocksOptions& options, const LocksResult& r) {
  if (r.mutexes.empty()) return "locks: no lock_wait or lock_held zones in this trace (recur's TracedMutex records them)\n";
  std::string out = fmt::format("locks: {} waited in {} waits on {} mutexes", format_ns(r.wait_ns), r.waits.size(),
                                r.mutexes.size());
  if (r.waits_without_holder > 0)
    out += fmt::format(" ({} waits, {}, without a known holder)", r.waits_without_holder, format_ns(r.wait_without_holder_ns));
  out += "\n";
  for (const MutexLocks& m : r.mutexes) {
    out += fmt::format("mutex {}: {} waits, {} total, max {}; held {} times, {} total, max {}\n", m.mutex, m.waits,
                       format_ns(m.wait_ns), format_ns(m.wait_max_ns), m.holds, format_ns(m.held_ns), format_ns(m.held_max_ns));
    if (m.rows.empty()) continue;
    TextTable table({"waiter", "waiting in", "holder", "holder in", ">waits", ">total", ">max"});
    for (size_t k = 0; k < m.rows.size() && k < options.top; ++k) {
      const LockRow& row = m.rows[k];
      table.add_row({row.waiter, row.waiter_zone, row.holder, row.holder_zone, std::to_string(row.count),
                     format_ns(row.total_ns), format_ns(row.max_ns)});
    }
    out += table.render(4);
  }
  return out;
}

Feedback locks_feedback(const LocksOptions& options, const LocksResult& r, std::string_view trace_name) {
  Feedback f = analysis_feedback("locks", fmt::format("trace {}: lock waits of '{}'", trace_name, options.select.text()));
  f.add_metric("lock_wait_us", ns_to_us(r.wait_ns), "us");
  f.add_metric("waits", double(r.waits.size()));
  f.add_metric("mutexes", double(r.mutexes.size()));
  int64_t max_wait = 0;
  for (const MutexLocks& m : r.mutexes) max_wait = std::max(max_wait, m.wait_max_ns);
  f.add_metric("max_wait_us", ns_to_us(max_wait), "us");
  f.add_metric("waits_without_holder", double(r.waits_without_holder));
  if (r.wait_ns > 0) {
    std::vector<Attribution> parts;
    for (const MutexLocks& m : r.mutexes) {
      for (const LockRow& row : m.rows) {
        if (row.holder == "unknown") continue;  // part of `unattributed`
        parts.push_back({fmt::format("lock:{} held by {} in {}", m.mutex, row.holder, row.holder_zone),
                         double(row.total_ns) / double(r.wait_ns),
                         fmt::format("{} waited in {} {} times, {} (max {})", row.waiter, row.waiter_zone, row.count,
                                     format_ns(row.total_ns), format_ns(row.max_ns))});
      }
    }
    std::stable_sort(parts.begin(), parts.end(), [](const Attribution& a, const Attribution& b) { return a.share > b.share; });
    set_decomposition(f, parts, options.top, "waiter/holder pairs", double(r.wait_without_holder_ns) / double(r.wait_ns),
                      fmt::format("{} waits whose holder is not in the trace", r.waits_without_holder));
  } else {
    f.notes.push_back(r.mutexes.empty() ? "no lock events in this trace" : "no thread waited on a lock");
  }
  for (const MutexLocks& m : r.mutexes) {
    if (m.waits > 0 && f.notes.size() < 4) {
      f.notes.push_back(fmt::format("{}: {} waits, {} total; held {} times, {} total", m.mutex, m.waits,
                                    format_ns(m.wait_ns), m.holds, format_ns(m.held_ns)));
    }
  }
  if (r.wait_ns > 0) f.next.push_back(fmt::format("recur analyze critical-path {} (are the waits on the critical path?)", trace_name));
  return f;
}

json locks_details(const ZoneTree& tree, const LocksResult& r) {
  json mutexes = json::array();
  for (const MutexLocks& m : r.mutexes) {
    json rows = json::array();
    for (const LockRow& row : m.rows) {
      rows.push_back({{"waiter", row.waiter}, {"waiter_zone", row.waiter_zone}, {"holder", row.holder},
                      {"holder_zone", row.holder_zone}, {"count", row.count}, {"total_us", ns_to_us(row.total_ns)},
                      {"max_us", ns_to_us(row.max_ns)}});
    }
    mutexes.push_back({{"mutex", m.mutex}, {"waits", m.waits}, {"wait_us", ns_to_us(m.wait_ns)},
                       {"wait_max_us", ns_to_us(m.wait_max_ns)}, {"holds", m.holds}, {"held_us", ns_to_us(m.held_ns)},
                       {"held_max_us", ns_to_us(m.held_max_ns)}, {"rows", std::move(rows)}});
  }
  json waits = json::array();
  for (const LockWait& w : r.waits) {
    if (waits.size() >= 1000) break;  // every wait is summed above; the list is for drilling in
    waits.push_back({{"mutex", w.mutex},
                     {"wait", zone_json(tree, w.wait_zone)},
                     {"waiter_zone", zone_json(tree, w.waiter_zone)},
                     {"holder_tid", w.holder_tid ? json(*w.holder_tid) : json(nullptr)},
                     {"holder", w.holder_track == kNoTrack ? json(nullptr) : json(thread_label(tree.table(), w.holder_track))},
                     {"holder_zone", zone_json(tree, w.holder_zone)},
                     {"held", zone_json(tree, w.held_zone)},
                     {"held_in", zone_json(tree, w.held_in)}});
  }
  size_t listed = waits.size();
  return {{"wait_us", ns_to_us(r.wait_ns)},
          {"waits_without_holder", r.waits_without_holder},
          {"mutexes", std::move(mutexes)},
          {"waits", std::move(waits)},
          {"waits_listed", listed}};
}

}  // namespace recur::analyze
