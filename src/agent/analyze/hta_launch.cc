#include "analyze/hta_launch.h"

#include <algorithm>
#include <limits>

#include "analyze/hta_join.h"

namespace recur::analyze {

double HtaLaunchStats::launch_delay_mean_us() const {
  if (n == 0) return std::numeric_limits<double>::quiet_NaN();
  return double(launch_delay_sum_ns) / 1e3 / double(n);
}

HtaLaunchStats hta_launch_stats(const HtaRows& in) {
  const std::vector<HtaRow>& rows = in.rows;
  HtaJoin launches(rows, [](const HtaRow& r) { return r.has(HtaRow::kLaunchStatsCall); });
  // CPU rows (no stream) and GPU rows whose correlation id is a launch's, joined on it.
  HtaJoin cpu(rows, [&](const HtaRow& r) { return !r.on_stream() && launches.contains(r.correlation); });
  HtaJoin gpu(rows, [&](const HtaRow& r) { return r.on_stream() && launches.contains(r.correlation); });
  HtaLaunchStats s;
  for (const auto& [corr, c] : cpu.entries()) {
    const HtaRow& call = rows[c];
    for (const auto& [unused, k] : gpu.find(corr)) {
      const HtaRow& kernel = rows[k];
      int64_t delay = std::max<int64_t>(0, kernel.ts - call.ts - call.dur);
      s.launch_delay_max_ns = s.n == 0 ? delay : std::max(s.launch_delay_max_ns, delay);
      ++s.n;
      s.cpu_dur_sum_ns += call.dur;
      s.gpu_dur_sum_ns += kernel.dur;
      s.launch_delay_sum_ns += delay;
    }
  }
  return s;
}

}  // namespace recur::analyze
