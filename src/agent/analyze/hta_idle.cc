#include "analyze/hta_idle.h"

#include <algorithm>
#include <array>
#include <limits>
#include <map>

namespace recur::analyze {

std::string_view hta_idle_category_name(HtaIdleCategory c) {
  switch (c) {
    case HtaIdleCategory::kHostWait: return "host_wait";
    case HtaIdleCategory::kKernelWait: return "kernel_wait";
    case HtaIdleCategory::kOther: break;
  }
  return "other";
}

std::vector<HtaIdleRow> hta_idle_time(const HtaRows& in, int64_t kernel_wait_threshold_ns) {
  struct Stream {
    size_t order = 0;
    bool started = false;
    int64_t prev_end = 0;
    std::array<bool, 3> seen{};
    std::array<int64_t, 3> idle{};
  };
  std::map<int64_t, Stream> streams;
  const std::vector<HtaRow>& rows = in.rows;
  for (const HtaRow& r : rows) {  // rows are in start order
    if (!r.on_stream() || !r.has(HtaRow::kKernelCategory)) continue;
    auto [it, added] = streams.try_emplace(r.stream);
    Stream& s = it->second;
    if (added) s.order = streams.size();
    HtaIdleCategory c = HtaIdleCategory::kOther;
    if (s.started) {
      int64_t gap = r.ts - s.prev_end;
      if (r.partner >= 0 && rows[size_t(r.partner)].ts > s.prev_end) {
        c = HtaIdleCategory::kHostWait;
      } else if (gap < kernel_wait_threshold_ns) {
        c = HtaIdleCategory::kKernelWait;
      }
      s.idle[size_t(c)] += gap;
    }
    s.seen[size_t(c)] = true;
    s.started = true;
    s.prev_end = r.end();
  }
  std::vector<const std::pair<const int64_t, Stream>*> order;
  for (const auto& kv : streams) order.push_back(&kv);
  std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->second.order < b->second.order; });
  std::vector<HtaIdleRow> out;
  for (const auto* kv : order) {
    const Stream& s = kv->second;
    int64_t total = s.idle[0] + s.idle[1] + s.idle[2];
    for (size_t c = 0; c < 3; ++c) {
      if (!s.seen[c]) continue;
      HtaIdleRow row;
      row.stream = kv->first;
      row.category = HtaIdleCategory(c);
      row.idle_ns = s.idle[c];
      row.ratio = total == 0 ? std::numeric_limits<double>::quiet_NaN() : double(s.idle[c]) / double(total);
      out.push_back(row);
    }
  }
  return out;
}

}  // namespace recur::analyze
