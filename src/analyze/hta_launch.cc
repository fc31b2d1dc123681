#include "analyze/hta_launch.h"

#include <algorithm>
#include <limits>
#include <unordered_set>
#include <utility>
#include <vector>

namespace recur::analyze {

double HtaLaunchStats::launch_delay_mean_us() const {
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  return double(launch_delay_sum_ns) / 1e3 / double(n);
}

HtaLaunchStats hta_launch_stats(const HtaRows& in) {
  const std::vector<HtaRow>& rows = in.rows;
  std::unordered_set<int64_t> launches;
  for (const HtaRow& r : rows) {
    if (r.has(HtaRow::kLaunchStatsCall)) launches.insert(r.correlation);
  }
  // (correlation, row) on each side, sorted by correlation, then joined.
  std::vector<std::pair<int64_t, uint32_t>> cpu, gpu;
  for (uint32_t i = 0; i < rows.size(); ++i) {
    if (!launches.contains(rows[i].correlation)) continue;
    (rows[i].on_stream() ? gpu : cpu).emplace_back(rows[i].correlation, i);
  }
  std::sort(cpu.begin(), cpu.end());
  std::sort(gpu.begin(), gpu.end());
  HtaLaunchStats s;
  size_t g = 0;
  for (size_t c = 0; c < cpu.size();) {
    int64_t corr = cpu[c].first;
    size_t c_end = c;
    while (c_end < cpu.size() && cpu[c_end].first == corr) ++c_end;
    while (g < gpu.size() && gpu[g].first < corr) ++g;
    size_t g_end = g;
    while (g_end < gpu.size() && gpu[g_end].first == corr) ++g_end;
    for (size_t i = c; i < c_end; ++i) {
      const HtaRow& call = rows[cpu[i].second];
      for (size_t k = g; k < g_end; ++k) {
        const HtaRow& kernel = rows[gpu[k].second];
        int64_t delay = std::max<int64_t>(0, kernel.ts - call.ts - call.dur);
        s.launch_delay_max_ns = s.n == 0 ? delay : std::max(s.launch_delay_max_ns, delay);
        ++s.n;
        s.cpu_dur_sum_ns += call.dur;
        s.gpu_dur_sum_ns += kernel.dur;
        s.launch_delay_sum_ns += delay;
      }
    }
    c = c_end;
  }
  return s;
}

}  // namespace recur::analyze
