#include "analyze/hta_gpu_time.h"

#include <algorithm>
#include <limits>

#include "analyze/interval_set.h"

namespace recur::analyze {

std::string hta_type_mix_label(unsigned mask) {
  std::string label;
  for (unsigned bit = 0; bit < 3; ++bit) {
    if ((mask & (1u << bit)) == 0) continue;
    if (!label.empty()) label += " overlapping ";
    label += hta_kernel_type_name(HtaKernelType(bit));
  }
  return label;
}

HtaGpuTime hta_gpu_time(const HtaRows& in) {
  HtaGpuTime g;
  // One interval set per class: computation, communication, memory (HtaKernelType order).
  std::array<IntervalSet, 3> by_type;
  IntervalSet all;
  int64_t first = std::numeric_limits<int64_t>::max(), last = std::numeric_limits<int64_t>::min();
  for (const HtaRow& r : in.rows) {
    if (!r.on_stream()) continue;
    ++g.kernels;
    first = std::min(first, r.ts);
    last = std::max(last, r.end());
    all.add(r.ts, r.end());
    if (r.kernel_type != HtaKernelType::kOther) by_type[size_t(r.kernel_type)].add(r.ts, r.end());
  }
  if (g.kernels == 0) return g;
  g.span_ns = last - first;
  g.busy_ns = all.length();
  g.compute_ns = by_type[0].length();
  g.communication_ns = by_type[1].length();
  g.comm_comp_overlap_ns = by_type[1].intersect(by_type[0]).length();
  for (unsigned mask = 1; mask < 8; ++mask) {
    IntervalSet inside, outside;
    bool first_in = true;
    for (unsigned bit = 0; bit < 3; ++bit) {
      if (mask & (1u << bit)) {
        inside = first_in ? by_type[bit] : inside.intersect(by_type[bit]);
        first_in = false;
      } else {
        outside = outside.unite(by_type[bit]);
      }
    }
    IntervalSet exactly = inside.subtract(outside);
    if (!exactly.empty()) g.type_mix_seen |= uint8_t(1u << mask);
    for (const Interval& iv : exactly.intervals()) g.type_mix_us[mask] += iv.length() / 1000;
  }
  return g;
}

}  // namespace recur::analyze
