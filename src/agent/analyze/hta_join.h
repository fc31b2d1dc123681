// HtaJoin: rows of an HtaRows grouped by correlation id, for the joins HTA makes on it (a
// kernel with its launch, launches with their kernels). A sorted (correlation, row) list: no
// hashing, one allocation. Plain value type; const methods are thread-safe.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "analyze/hta_rows.h"

namespace recur::analyze {

class HtaJoin {
 public:
  using Entry = std::pair<int64_t, uint32_t>;  // (correlation, row index)

  // The rows for which keep(row) holds, by correlation (row order kept within one id).
  template <typename Keep>
  HtaJoin(const std::vector<HtaRow>& rows, Keep keep) {
    for (uint32_t i = 0; i < rows.size(); ++i) {
      if (keep(rows[i])) entries_.emplace_back(rows[i].correlation, i);
    }
    std::sort(entries_.begin(), entries_.end());
  }

  // The rows with this correlation id, in row order.
  std::span<const Entry> find(int64_t correlation) const {
    auto lo = std::lower_bound(entries_.begin(), entries_.end(), Entry{correlation, 0});
    auto hi = lo;
    while (hi != entries_.end() && hi->first == correlation) ++hi;
    return {lo, hi};
  }
  bool contains(int64_t correlation) const { return !find(correlation).empty(); }
  const std::vector<Entry>& entries() const { return entries_; }

 private:
  std::vector<Entry> entries_;
};

}  // namespace recur::analyze
