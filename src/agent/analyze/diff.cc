#include "analyze/diff.h"

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "analyze/interval_set.h"
#include "analyze/trace_labels.h"

namespace recur::analyze {
// Named, not anonymous: DiffBuilder::State (declared in the header) holds these.
namespace diff_internal {

struct Occurrence {
  int64_t begin, self;
};

// The paths of both traces in one tree of segments, so BASE and CAND align by path without
// joining path texts (20,000 nested zones have 400 MB+ of them): node 0 is the root "", a
// node is (parent node, segment), and a node's parent has a smaller index. Segments are
// copied, so a trace's tree can go once it is added.
class JointPaths {
 public:
  JointPaths() : parent_{0}, segment_{""} {}
  // The node of every path of `tree` (indexed by path id).
  std::vector<uint32_t> add(const ZoneTree& tree) {
    std::vector<uint32_t> node(tree.path_count(), 0);
    for (uint32_t p = 1; p < tree.path_count(); ++p) {  // a path's parent has a smaller id
      uint32_t parent = node[tree.path_parent(p)];
      std::string_view seg = tree.path_segment(p);
      auto it = index_.find(Key{parent, seg});
      if (it == index_.end()) {
        std::string_view own = texts_.emplace_back(seg);
        it = index_.emplace(Key{parent, own}, uint32_t(parent_.size())).first;
        parent_.push_back(parent);
        segment_.push_back(own);
        length_.push_back((parent == 0 ? 0 : length_[parent] + 1) + seg.size());
      }
      node[p] = it->second;
    }
    return node;
  }
  size_t size() const { return parent_.size(); }
  uint64_t length(uint32_t n) const { return length_[n]; }
  std::vector<uint32_t> order() const { return segment_tree_order(parent_, segment_); }
  std::string text(uint32_t n) const {
    std::string out(length_[n], '/');
    for (; n != 0; n = parent_[n]) out.replace(length_[n] - segment_[n].size(), segment_[n].size(), segment_[n]);
    return out;
  }

 private:
  struct Key {
    uint32_t parent;
    std::string_view segment;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const noexcept {
      return std::hash<std::string_view>{}(k.segment) ^ (size_t(k.parent) * 0x9E3779B97F4A7C15ull);
    }
  };
  std::deque<std::string> texts_;  // the segments' text (a deque: views into it stay valid)
  std::vector<uint32_t> parent_;
  std::vector<std::string_view> segment_;
  std::vector<uint64_t> length_{0};
  std::unordered_map<Key, uint32_t, KeyHash> index_;
};

// One trace's side of the diff: the end-to-end time and, per joint path node, the self time
// of each occurrence in scope (by begin).
struct Side {
  int64_t total_ns = 0;
  uint64_t roots = 0;
  std::unordered_map<uint32_t, std::vector<Occurrence>> paths;
  std::map<std::string, uint64_t> named_threads;
  uint64_t unnamed_threads = 0;
};

Result<Side> collect(const ZoneTree& tree, const DiffOptions& options, std::string_view which, JointPaths& joint) {
  Side s;
  std::vector<uint32_t> node_of_path = joint.add(tree);
  IntervalSet windows;
  std::vector<bool> is_root;
  if (options.root) {
    ZoneMatcher match(*options.root, tree);
    is_root.assign(tree.size(), false);
    // Per zone: inside a root zone (parents precede their children in zone order).
    std::vector<bool> under_root(tree.size(), false);
    std::vector<Interval> w;
    for (uint32_t z = 0; z < tree.size(); ++z) {
      uint32_t p = tree.zone(z).parent;
      under_root[z] = p != kNoZone && (is_root[p] || under_root[p]);
      if (!match.matches(z)) continue;
      is_root[z] = true;
      // Only the outermost: a root inside another root is already counted.
      if (under_root[z]) continue;
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
  std::vector<bool> track_seen(tree.table().tracks().size(), false);
  for (uint32_t z = 0; z < tree.size(); ++z) {
    if (!in_scope(z)) continue;
    const Zone& zn = tree.zone(z);
    s.paths[node_of_path[zn.path]].push_back({zn.begin, zn.self_ns});
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

}  // namespace diff_internal

struct DiffBuilder::State {
  DiffOptions options;
  diff_internal::JointPaths joint;
  std::vector<diff_internal::Side> sides;
};

DiffBuilder::DiffBuilder(const DiffOptions& options) : state_(std::make_unique<State>()) { state_->options = options; }
DiffBuilder::~DiffBuilder() = default;

Status DiffBuilder::add(const ZoneTree& tree) {
  if (state_->sides.size() == 2) return make_error(ErrorCode::kFailedPrecondition, "diff: BASE and CAND are already added");
  RECUR_ASSIGN_OR_RETURN(diff_internal::Side side, diff_internal::collect(tree, state_->options, state_->sides.empty() ? "BASE" : "CAND", state_->joint));
  state_->sides.push_back(std::move(side));
  return ok_status();
}

Result<DiffResult> analyze_diff(const ZoneTree& base, const ZoneTree& cand, const DiffOptions& options) {
  DiffBuilder builder(options);
  RECUR_RETURN_IF_ERROR(builder.add(base));
  RECUR_RETURN_IF_ERROR(builder.add(cand));
  return builder.finish();
}

DiffResult DiffBuilder::finish() const {
  using diff_internal::JointPaths, diff_internal::Occurrence, diff_internal::Side, diff_internal::sum_self;
  const DiffOptions& options = state_->options;
  const JointPaths& joint = state_->joint;
  const Side& b = state_->sides.at(0);
  const Side& c = state_->sides.at(1);
  DiffResult r;
  r.measure = options.root ? fmt::format("root '{}'", options.root->text()) : "trace span";
  r.base_ns = b.total_ns;
  r.cand_ns = c.total_ns;
  r.base_roots = b.roots;
  r.cand_roots = c.roots;
  r.threads = diff_internal::diff_threads(b, c);
  const int64_t delta = r.delta_ns();
  const int sign = delta >= 0 ? 1 : -1;
  static const std::vector<Occurrence> kNone;
  std::vector<uint32_t> row_node;  // per row: its joint path node (texts come last)
  auto add_row = [&](uint32_t node, const std::vector<Occurrence>& bo, const std::vector<Occurrence>& co) {
    DiffRow row;
    row_node.push_back(node);
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
  for (uint32_t node = 1; node < joint.size(); ++node) {
    auto bi = b.paths.find(node);
    auto ci = c.paths.find(node);
    if (bi == b.paths.end() && ci == c.paths.end()) continue;
    add_row(node, bi == b.paths.end() ? kNone : bi->second, ci == c.paths.end() ? kNone : ci->second);
  }

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
  // Largest |change| first, ties in path order; then the texts: all of them while they fit
  // kPathTextBudget, else those of the rows shown (--top) and the first offsets (named in notes).
  std::vector<uint32_t> rank = joint.order();
  std::vector<uint32_t> order(r.rows.size());
  for (uint32_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    int64_t dx = std::llabs(r.rows[x].delta_ns()), dy = std::llabs(r.rows[y].delta_ns());
    return dx != dy ? dx > dy : rank[row_node[x]] < rank[row_node[y]];
  });
  uint64_t text_bytes = 0;
  for (uint32_t node : row_node) text_bytes += joint.length(node);
  std::vector<DiffRow> sorted;
  sorted.reserve(order.size());
  size_t offsets_named = 0;
  for (uint32_t k : order) {
    DiffRow& row = sorted.emplace_back(std::move(r.rows[k]));
    bool offset = row.share == 0 && row.delta_ns() != 0;
    if (text_bytes <= kPathTextBudget || sorted.size() <= options.top || (offset && offsets_named < kNamedOffsets)) {
      row.path = joint.text(row_node[k]);
      offsets_named += offset;
    } else {
      ++r.paths_unnamed;
    }
  }
  r.rows = std::move(sorted);
  return r;
}

}  // namespace recur::analyze
