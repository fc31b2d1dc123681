#include "analyze/hta_filter.h"

#include <algorithm>
#include <limits>

#include "analyze/hta_join.h"

namespace recur::analyze {

bool hta_filters_last_step(const std::vector<std::string>& distinct_step_names) {
  return distinct_step_names.size() > 1;
}

HtaRows exclude_last_profiler_step(const HtaRows& in) {
  const std::vector<HtaRow>& rows = in.rows;
  bool any_cpu = false;
  int64_t first_cpu = std::numeric_limits<int64_t>::max();
  int64_t last_step = std::numeric_limits<int64_t>::min();
  bool any_step = false;
  for (const HtaRow& r : rows) {
    if (r.has(HtaRow::kGpu)) continue;
    any_cpu = true;
    first_cpu = std::min(first_cpu, r.ts);
    if (r.has(HtaRow::kProfilerStep)) {
      any_step = true;
      last_step = std::max(last_step, r.ts);
    }
  }
  if (!any_cpu) return in;
  const int64_t cutoff = any_step ? last_step : first_cpu;

  // The CPU rows kept, by correlation id: a GPU row is kept once per match.
  HtaJoin kept_cpu(rows, [cutoff](const HtaRow& r) { return !r.has(HtaRow::kGpu) && r.ts < cutoff; });
  HtaRows out;
  out.profiler_steps = in.profiler_steps;
  out.rounded = in.rounded;
  out.rows.reserve(rows.size());
  std::vector<int32_t> new_index(rows.size(), -1);
  for (size_t i = 0; i < rows.size(); ++i) {
    const HtaRow& r = rows[i];
    uint32_t copies = 0;
    if (!r.has(HtaRow::kGpu)) {
      copies = r.ts < cutoff ? 1 : 0;
    } else {
      copies = uint32_t(kept_cpu.find(r.correlation).size());
    }
    if (copies > 0) new_index[i] = int32_t(out.rows.size());
    for (uint32_t c = 0; c < copies; ++c) out.rows.push_back(r);
  }
  for (HtaRow& r : out.rows) {
    if (r.partner >= 0) r.partner = new_index[size_t(r.partner)];
  }
  return out;
}

}  // namespace recur::analyze
