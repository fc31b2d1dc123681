// Measures the roofline peaks in sysinfo.h with the loops in roofline_kernels.h.
#pragma once

#include <vector>

#include "core/thread_pool.h"
#include "probe/sysinfo.h"

namespace recur {

struct RooflineOptions {
  int samples = 7;                 // per peak; the median is reported, with min and max
  double compute_sample_ms = 40;   // target duration of one compute sample
  size_t min_buffer_bytes = size_t(512) << 20;  // read-bandwidth buffer: 4x the L3, clamped
  size_t max_buffer_bytes = size_t(1) << 30;
};

// Measures every peak at the active ISA level. `pool` supplies the all-thread runs.
Roofline measure_roofline(ThreadPool& pool, const std::vector<CacheLevel>& caches,
                          const RooflineOptions& options = {});

// Median, min and max of samples (empty samples give zeros).
PeakMeasurement summarize_samples(std::vector<double> samples, int threads, const char* unit,
                                  std::string method);

}  // namespace recur
