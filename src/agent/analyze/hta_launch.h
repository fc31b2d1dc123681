// HTA's CUDA kernel launch statistics for one rank. The calls counted are cudaLaunchKernel,
// cudaLaunchKernelExC, MTIA's runFunction, cudaMemcpyAsync and cudaMemsetAsync; every CPU row
// (stream -1) and every GPU row (a stream) whose correlation id is one of those calls' is
// joined with the rows of the other side that share it (one pair per match), and per pair:
//   cpu duration   the CPU call's duration;
//   gpu duration   the kernel's duration;
//   launch delay   kernel start - CPU call end, clipped at 0.
// HIP launches are not in HTA's list, so an AMD trace has no pairs. Plain function; thread-safe.
#pragma once

#include <cstdint>

#include "analyze/hta_rows.h"

namespace recur::analyze {

struct HtaLaunchStats {
  size_t n = 0;                      // pairs
  int64_t cpu_dur_sum_ns = 0;
  int64_t gpu_dur_sum_ns = 0;
  int64_t launch_delay_sum_ns = 0;
  int64_t launch_delay_max_ns = 0;   // 0 when n == 0

  // Mean launch delay in µs (NaN when n == 0).
  double launch_delay_mean_us() const;
};

HtaLaunchStats hta_launch_stats(const HtaRows& rows);

}  // namespace recur::analyze
