#include "analyze/breakdown.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "analyze/interval_set.h"
#include "analyze/trace_labels.h"
#include "trace/traced_mutex.h"

namespace recur::analyze {
namespace {

struct Acc {
  uint64_t count = 0;
  int64_t total = 0, self = 0;
  std::vector<int64_t> durs;
};

// The row key of a zone, as an id within its kind (string id, path id, track).
uint64_t key_id(const ZoneTree& tree, uint32_t z, BreakdownBy by) {
  const trace::EventTable& t = tree.table();
  switch (by) {
    case BreakdownBy::kName: return t.name_id(tree.zone(z).event);
    case BreakdownBy::kPath: return tree.zone(z).path;
    case BreakdownBy::kCategory: return t.cat_id(tree.zone(z).event);
    case BreakdownBy::kThread: return tree.zone(z).track;
  }
  return 0;
}

std::string key_text(const ZoneTree& tree, uint64_t id, BreakdownBy by) {
  const trace::EventTable& t = tree.table();
  switch (by) {
    case BreakdownBy::kName:
    case BreakdownBy::kCategory: return std::string(t.str(trace::StringId(id)));
    case BreakdownBy::kPath: return std::string(tree.path(uint32_t(id)));
    case BreakdownBy::kThread: return thread_label(t, uint32_t(id));
  }
  return "";
}

}  // namespace

Result<BreakdownBy> parse_breakdown_by(std::string_view text) {
  if (text == "name") return BreakdownBy::kName;
  if (text == "path") return BreakdownBy::kPath;
  if (text == "cat" || text == "category") return BreakdownBy::kCategory;
  if (text == "thread") return BreakdownBy::kThread;
  return invalid_argument("breakdown by '{}': expected name, path, cat or thread", text);
}

std::string_view breakdown_by_name(BreakdownBy by) {
  switch (by) {
    case BreakdownBy::kName: return "name";
    case BreakdownBy::kPath: return "path";
    case BreakdownBy::kCategory: return "cat";
    case BreakdownBy::kThread: return "thread";
  }
  return "?";
}

int64_t nearest_rank(const std::vector<int64_t>& sorted, double p) {
  if (sorted.empty()) return 0;
  size_t rank = size_t(std::ceil(p / 100.0 * double(sorted.size())));
  return sorted[std::clamp<size_t>(rank, 1, sorted.size()) - 1];
}

BreakdownResult analyze_breakdown(const ZoneTree& tree, const BreakdownOptions& options) {
  const trace::EventTable& t = tree.table();
  BreakdownResult r;
  r.span_ns = tree.span_ns();
  ZoneMatcher match(options.select, tree);
  std::unordered_map<uint64_t, Acc> acc;
  std::vector<IntervalSet> busy(t.tracks().size()), wait(t.tracks().size());
  std::vector<ThreadTime> threads(t.tracks().size());
  for (uint32_t z = 0; z < tree.size(); ++z) {
    const Zone& zn = tree.zone(z);
    if (t.cat(zn.event) == trace::kLockWaitCategory) wait[zn.track].add(zn.begin, zn.end);
    if (!match.matches(z)) continue;
    Acc& a = acc[key_id(tree, z, options.by)];
    ++a.count;
    a.total += zn.dur();
    a.self += zn.self_ns;
    a.durs.push_back(zn.dur());
    r.self_total_ns += zn.self_ns;
    ++r.zones;
    busy[zn.track].add(zn.begin, zn.end);  // zones of a track come in begin order: O(1)
    ThreadTime& th = threads[zn.track];
    if (th.zones++ == 0) th.first_ns = zn.begin;
    th.last_ns = std::max(th.last_ns, zn.end);
  }
  bool by_path = options.by == BreakdownBy::kPath;
  std::vector<uint64_t> ids;  // per row: its key id
  for (auto& [id, a] : acc) {
    std::sort(a.durs.begin(), a.durs.end());
    BreakdownRow row;
    ids.push_back(id);
    // Path texts wait until the rows are ordered (see below); other keys are short.
    if (!by_path) row.key = key_text(tree, id, options.by);
    row.count = a.count;
    row.total_ns = a.total;
    row.self_ns = a.self;
    row.mean_ns = a.total / int64_t(a.count);
    row.p50_ns = nearest_rank(a.durs, 50);
    row.p99_ns = nearest_rank(a.durs, 99);
    row.max_ns = a.durs.back();
    row.share = r.self_total_ns > 0 ? double(a.self) / double(r.self_total_ns) : 0.0;
    r.rows.push_back(std::move(row));
  }
  std::vector<uint32_t> order(r.rows.size());
  for (uint32_t k = 0; k < order.size(); ++k) order[k] = k;
  std::vector<uint32_t> path_rank = by_path ? tree.path_order() : std::vector<uint32_t>();
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const BreakdownRow& a = r.rows[x];
    const BreakdownRow& b = r.rows[y];
    if (a.self_ns != b.self_ns) return a.self_ns > b.self_ns;
    return by_path ? path_rank[ids[x]] < path_rank[ids[y]] : a.key < b.key;
  });
  std::vector<BreakdownRow> sorted;
  sorted.reserve(order.size());
  uint64_t text_bytes = 0;
  if (by_path)
    for (uint64_t id : ids) text_bytes += tree.path_length(uint32_t(id));
  for (uint32_t k : order) {
    BreakdownRow& row = sorted.emplace_back(std::move(r.rows[k]));
    if (!by_path) continue;
    // Every path text while they fit the budget; past it, only the rows that are shown.
    if (text_bytes <= kPathTextBudget || sorted.size() <= options.top) {
      row.key = tree.path(uint32_t(ids[k]));
    } else {
      ++r.keys_left_out;
    }
  }
  r.rows = std::move(sorted);
  for (uint32_t tr = 0; tr < threads.size(); ++tr) {
    ThreadTime& th = threads[tr];
    if (th.zones == 0) continue;
    th.track = tr;
    th.label = thread_label(t, tr);
    th.busy_ns = busy[tr].length();
    th.idle_ns = r.span_ns - th.busy_ns;
    th.wait_ns = wait[tr].length();
    r.threads.push_back(std::move(th));
  }
  return r;
}

}  // namespace recur::analyze
