// IntervalSet: a set of time as sorted, disjoint, half-open [begin, end) ns intervals, with the
// algebra every analysis is built from (union, intersection, difference, measure).
//
// Why half-open and merged: busy time is a measure, so intervals that touch ([0,5) and [5,9))
// neither overlap nor double count, and zero-length events add nothing. Normalisation merges
// overlapping and touching intervals and drops empty ones, so length() is a plain sum.
// Plain value type; const methods are thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace recur::analyze {

struct Interval {
  int64_t begin = 0;  // ns, inclusive
  int64_t end = 0;    // ns, exclusive
  int64_t length() const { return end > begin ? end - begin : 0; }
  friend bool operator==(const Interval&, const Interval&) = default;
};

class IntervalSet {
 public:
  IntervalSet() = default;
  // Normalises any list: sorts, merges overlapping or touching intervals, drops empty ones.
  explicit IntervalSet(std::vector<Interval> intervals);

  // Adds one interval (amortised O(1) when added in begin order, as trace rows are).
  void add(Interval iv);
  void add(int64_t begin, int64_t end) { add(Interval{begin, end}); }

  const std::vector<Interval>& intervals() const { return intervals_; }
  bool empty() const { return intervals_.empty(); }
  size_t size() const { return intervals_.size(); }
  // Total covered time.
  int64_t length() const;
  // Covered time inside one interval.
  int64_t overlap_length(Interval iv) const;
  // Earliest begin and latest end; {0, 0} when empty.
  Interval span() const;

  IntervalSet unite(const IntervalSet& other) const;
  IntervalSet intersect(const IntervalSet& other) const;
  IntervalSet subtract(const IntervalSet& other) const;
  // Only the parts inside `window`.
  IntervalSet clip(Interval window) const;

  friend bool operator==(const IntervalSet&, const IntervalSet&) = default;

 private:
  void normalize();
  std::vector<Interval> intervals_;
  bool sorted_ = true;  // false after an out-of-order add(); fixed lazily by normalize()
};

}  // namespace recur::analyze
