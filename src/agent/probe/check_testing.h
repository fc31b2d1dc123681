// Helpers for tests that run check on registered kernels.
#pragma once

#include "probe/bench_roofline.h"

namespace recur::probe {

// Peaks far above any machine: the roofline defence stays on but cannot misfire on a loaded CI
// host (check_test covers the defence itself with real peaks).
inline MachinePeaks unreachable_peaks() {
  MachinePeaks p;
  p.dram_gbps = 1e5;
  p.gflops = 1e7;
  p.cache_gbps = 1e6;
  p.llc_bytes = 32 << 20;
  return p;
}

}  // namespace recur::probe
