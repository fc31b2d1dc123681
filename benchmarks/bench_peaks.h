// In-run peaks for the kernel benchmarks: the `recur sysinfo` loops (roofline_kernels.h) timed
// inside a benchmark's own rotation, so a kernel's bandwidth or FLOP fraction divides by what
// the machine gave in the same run, and paired per-run fractions. On a machine shared with
// other jobs this is steadier than dividing by the cached roofline, which was measured under
// whatever load there was then. Header-only; not thread-safe (uses the pool).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/thread_pool.h"
#include "probe/roofline_kernels.h"

namespace recur::bench {

inline volatile uint64_t g_peak_sink = 0;  // keeps the loops' results alive

// The sysinfo sum-read over [data, data + bytes) (rounded down to 256 bytes), split over the
// pool's threads as static chunks.
inline void pool_sum_read(ThreadPool* pool, const std::byte* data, size_t bytes) {
  const roofline::ReadFn read = roofline::kRead.get();
  const int64_t blocks = int64_t(bytes / 256);
  pool->parallel_for(pool->size(), [&](int64_t b, int64_t, int) {
    const Range r = static_chunk(blocks, pool->size(), int(b));
    g_peak_sink = g_peak_sink + read(data + r.begin * 256, size_t(r.end - r.begin) * 256);
  });
}

// The sysinfo fp32 FMA loop, `iters` iterations on every thread; returns the FLOPs done.
inline double pool_fma(ThreadPool* pool, int64_t iters) {
  const roofline::ComputeLoop* loop = roofline::kFma.get();
  pool->parallel_for(pool->size(), [&](int64_t, int64_t, int) { g_peak_sink = g_peak_sink + uint64_t(loop->run(iters)); });
  return double(iters) * loop->ops_per_iter * pool->size();
}

// Run by run, (work / t_kernel) / (peak_work / t_peak) over times taken in the same runs:
// "median [min .. max]".
inline std::string paired_fraction(double work, const std::vector<double>& t_kernel, double peak_work,
                                   const std::vector<double>& t_peak) {
  std::vector<double> f;
  for (size_t r = 0; r < std::min(t_kernel.size(), t_peak.size()); ++r)
    f.push_back((work / t_kernel[r]) / (peak_work / t_peak[r]));
  if (f.empty()) return "—";
  std::sort(f.begin(), f.end());
  const double med = f.size() % 2 ? f[f.size() / 2] : 0.5 * (f[f.size() / 2 - 1] + f[f.size() / 2]);
  return fmt::format("{:.2f} [{:.2f} .. {:.2f}]", med, f.front(), f.back());
}

}  // namespace recur::bench
