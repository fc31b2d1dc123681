#include "analyze/interval_set.h"

#include <algorithm>

namespace recur::analyze {

IntervalSet::IntervalSet(std::vector<Interval> intervals) : intervals_(std::move(intervals)) {
  sorted_ = false;
  normalize();
}

void IntervalSet::normalize() {
  std::erase_if(intervals_, [](const Interval& iv) { return iv.end <= iv.begin; });
  std::sort(intervals_.begin(), intervals_.end(),
            [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  size_t out = 0;
  for (size_t i = 0; i < intervals_.size(); ++i) {
    if (out > 0 && intervals_[i].begin <= intervals_[out - 1].end) {
      intervals_[out - 1].end = std::max(intervals_[out - 1].end, intervals_[i].end);
    } else {
      intervals_[out++] = intervals_[i];
    }
  }
  intervals_.resize(out);
  sorted_ = true;
}

void IntervalSet::add(Interval iv) {
  if (iv.end <= iv.begin) return;
  if (!sorted_) {
    intervals_.push_back(iv);
    normalize();
    return;
  }
  if (intervals_.empty() || iv.begin > intervals_.back().end) {
    intervals_.push_back(iv);
  } else if (iv.begin >= intervals_.back().begin) {
    intervals_.back().end = std::max(intervals_.back().end, iv.end);
  } else {
    // Out of begin order: merge the slow way (rare for trace rows, which come sorted by ts).
    intervals_.push_back(iv);
    sorted_ = false;
    normalize();
  }
}

int64_t IntervalSet::length() const {
  int64_t total = 0;
  for (const Interval& iv : intervals_) total += iv.end - iv.begin;
  return total;
}

int64_t IntervalSet::overlap_length(Interval iv) const {
  if (iv.end <= iv.begin) return 0;
  // First interval ending after iv.begin.
  auto it = std::upper_bound(intervals_.begin(), intervals_.end(), iv.begin,
                             [](int64_t t, const Interval& x) { return t < x.end; });
  int64_t total = 0;
  for (; it != intervals_.end() && it->begin < iv.end; ++it) {
    total += std::min(it->end, iv.end) - std::max(it->begin, iv.begin);
  }
  return total;
}

Interval IntervalSet::span() const {
  if (intervals_.empty()) return {};
  return {intervals_.front().begin, intervals_.back().end};
}

IntervalSet IntervalSet::unite(const IntervalSet& other) const {
  std::vector<Interval> all;
  all.reserve(intervals_.size() + other.intervals_.size());
  std::merge(intervals_.begin(), intervals_.end(), other.intervals_.begin(),
             other.intervals_.end(), std::back_inserter(all),
             [](const Interval& a, const Interval& b) { return a.begin < b.begin; });
  return IntervalSet(std::move(all));
}

IntervalSet IntervalSet::intersect(const IntervalSet& other) const {
  IntervalSet out;
  size_t i = 0, j = 0;
  const auto& a = intervals_;
  const auto& b = other.intervals_;
  while (i < a.size() && j < b.size()) {
    int64_t lo = std::max(a[i].begin, b[j].begin);
    int64_t hi = std::min(a[i].end, b[j].end);
    if (lo < hi) out.intervals_.push_back({lo, hi});
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;  // pieces of disjoint, non-touching inputs are disjoint and sorted
}

IntervalSet IntervalSet::subtract(const IntervalSet& other) const {
  IntervalSet out;
  size_t j = 0;
  const auto& b = other.intervals_;
  for (Interval cur : intervals_) {
    while (j < b.size() && b[j].end <= cur.begin) ++j;
    size_t k = j;
    while (k < b.size() && b[k].begin < cur.end) {
      if (b[k].begin > cur.begin) out.intervals_.push_back({cur.begin, b[k].begin});
      cur.begin = std::max(cur.begin, b[k].end);
      if (cur.begin >= cur.end) break;
      ++k;
    }
    if (cur.begin < cur.end) out.intervals_.push_back(cur);
  }
  return out;
}

IntervalSet IntervalSet::clip(Interval window) const {
  return intersect(IntervalSet(std::vector<Interval>{window}));
}

}  // namespace recur::analyze
