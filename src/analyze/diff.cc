#include "analyze/diff.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "analyze/interval_set.h"
#include "analyze/trace_labels.h"

namespace recur::analyze {
namespace {

struct Occurrence {
  int64_t begin, self;
};

// One trace's side of the diff: the end-to-end time and, per path, the self time of each
// occurrence in scope (by begin).
struct Side {
  int64_t total_ns = 0;
  uint64_t roots = 0;
  std::map<std::string, std::vector<Occurrence>, std::less<>> paths;
  std::map<std::string, uint64_t> named_threads;
  uint64_t unnamed_threads = 0;
};

Result<Side> collect(const ZoneTree& tree, const DiffOptions& options, std::string_view which) {
  Side s;
  IntervalSet windows;
  std::vector<bool> is_root;
  if (options.root) {
    ZoneMatcher match(*options.root, tree);
    is_root.assign(tree.size(), false);
    std::vector<Interval> w;
    for (uint32_t z = 0; z < tree.size(); ++z) {
      if (!match.matches(z)) continue;
      is_root[z] = true;
      // Only the outermost: a root inside another root is already counted.
      bool nested = false;
      for (uint32_t p = tree.zone(z).parent; p != kNoZone && !nested; p = tree.zone(p).parent) nested = is_root[p];
      if (nested) continue;
      ++s.roots;
      s.total_ns += tree.zone(z).dur();
      w.push_back({tree.zone(z).begin, tree.zone(z).end});
    }
    if (s.roots == 0) {
      return not_found("diff: root '{}' selects no zone in {} ({} zones)", options.root->text(), which, tree.size());
    }
    windows = IntervalSet(std::move(w));
  } else {
    s.total_ns = tree.span_ns();
  }
  auto in_scope = [&](uint32_t z) {
    if (!options.root) return true;
    if (is_root[z]) return true;
    const std::vector<Interval>& ivs = windows.intervals();
    int64_t b = tree.zone(z).begin;
    auto it = std::upper_bound(ivs.begin(), ivs.end(), b, [](int64_t v, const Interval& iv) { return v < iv.begin; });
    return it != ivs.begin() && b < (it - 1)->end;
  };
  std::unordered_map<uint32_t, std::vector<Occurrence>*> by_path;
  std::vector<bool> track_seen(tree.table().tracks().size(), false);
  for (uint32_t z = 0; z < tree.size(); ++z) {
    if (!in_scope(z)) continue;
    const Zone& zn = tree.zone(z);
    auto [it, added] = by_path.try_emplace(zn.path, nullptr);
    if (added) it->second = &s.paths[std::string(tree.path(zn.path))];
    it->second->push_back({zn.begin, zn.self_ns});
    if (!track_seen[zn.track]) {
      track_seen[zn.track] = true;
      const trace::Track& tr = tree.table().tracks()[zn.track];
      if (tr.thread_name != 0) {
        ++s.named_threads[std::string(tree.table().str(tr.thread_name))];
      } else {
        ++s.unnamed_threads;
      }
    }
  }
  for (auto& [path, occ] : s.paths) {
    std::stable_sort(occ.begin(), occ.end(), [](const Occurrence& a, const Occurrence& b) { return a.begin < b.begin; });
  }
  return s;
}

DiffThreads diff_threads(const Side& base, const Side& cand) {
  DiffThreads t;
  t.base_unnamed = base.unnamed_threads;
  t.cand_unnamed = cand.unnamed_threads;
  auto label = [](const std::string& name, uint64_t n) { return n == 1 ? name : fmt::format("{} x{}", name, n); };
  for (const auto& [name, n] : base.named_threads) {
    t.base_named += n;
    auto it = cand.named_threads.find(name);
    uint64_t m = it == cand.named_threads.end() ? 0 : it->second;
    if (n > m) t.removed.push_back(label(name, n - m));
  }
  for (const auto& [name, n] : cand.named_threads) {
    t.cand_named += n;
    auto it = base.named_threads.find(name);
    uint64_t m = it == base.named_threads.end() ? 0 : it->second;
    if (n > m) t.added.push_back(label(name, n - m));
  }
  return t;
}

int64_t sum_self(const std::vector<Occurrence>& v) {
  int64_t s = 0;
  for (const Occurrence& o : v) s += o.self;
  return s;
}

}  // namespace

Result<DiffResult> analyze_diff(const ZoneTree& base, const ZoneTree& cand, const DiffOptions& options) {
  RECUR_ASSIGN_OR_RETURN(Side b, collect(base, options, "BASE"));
  RECUR_ASSIGN_OR_RETURN(Side c, collect(cand, options, "CAND"));
  DiffResult r;
  r.measure = options.root ? fmt::format("root '{}'", options.root->text()) : "trace span";
  r.base_ns = b.total_ns;
  r.cand_ns = c.total_ns;
  r.base_roots = b.roots;
  r.cand_roots = c.roots;
  r.threads = diff_threads(b, c);
  const int64_t delta = r.delta_ns();
  const int sign = delta >= 0 ? 1 : -1;
  static const std::vector<Occurrence> kNone;
  auto add_row = [&](const std::string& path, const std::vector<Occurrence>& bo, const std::vector<Occurrence>& co) {
    DiffRow row;
    row.path = path;
    row.base_count = bo.size();
    row.cand_count = co.size();
    row.base_self_ns = sum_self(bo);
    row.cand_self_ns = sum_self(co);
    for (size_t k = 0; k < std::min(bo.size(), co.size()); ++k) {
      int64_t d = co[k].self - bo[k].self;
      if (!row.has_worst || sign * d > sign * row.worst_delta_ns) {
        row.worst_delta_ns = d;
        row.worst_k = k;
        row.has_worst = true;
      }
    }
    r.components_ns += row.delta_ns();
    r.rows.push_back(std::move(row));
  };
  for (const auto& [path, bo] : b.paths) {
    auto it = c.paths.find(path);
    add_row(path, bo, it == c.paths.end() ? kNone : it->second);
  }
  for (const auto& [path, co] : c.paths)
    if (!b.paths.contains(path)) add_row(path, kNone, co);

  r.unattributed_ns = delta - r.components_ns;
  for (const DiffRow& row : r.rows) {
    int64_t with = sign * row.delta_ns();
    (with > 0 ? r.gross_ns : r.offsets_ns) += std::llabs(with);
  }
  int64_t rest = sign * r.unattributed_ns;
  (rest > 0 ? r.gross_ns : r.offsets_ns) += std::llabs(rest);
  if (r.gross_ns > 0) {
    for (DiffRow& row : r.rows) {
      int64_t with = sign * row.delta_ns();
      row.share = with > 0 ? double(with) / double(r.gross_ns) : 0.0;
    }
    r.unattributed_share = rest > 0 ? double(rest) / double(r.gross_ns) : 0.0;
  } else {
    r.unattributed_share = 1.0;  // nothing changed: the whole (zero) change is unexplained
  }
  std::stable_sort(r.rows.begin(), r.rows.end(), [](const DiffRow& x, const DiffRow& y) {
    return std::llabs(x.delta_ns()) > std::llabs(y.delta_ns());
  });
  return r;
}

}  // namespace recur::analyze
