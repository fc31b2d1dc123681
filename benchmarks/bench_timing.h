// Timing helpers shared by the benchmark programs: the machine's roofline with a pinned pool,
// seconds per call of a callable repeated for at least a sample's length (after one warm call),
// and the median of a run's samples. Header-only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "core/clock.h"
#include "core/thread_pool.h"
#include "probe/sysinfo.h"

namespace recur::bench {

// recur::machine_roofline() and a pool of `threads` pinned threads: what a kernel benchmark
// times on and judges against.
struct Bench {
  Roofline roof;
  std::unique_ptr<ThreadPool> pool;
};
inline Result<Bench> bench_setup(int threads) {
  RECUR_ASSIGN_OR_RETURN(Roofline roof, machine_roofline());
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<ThreadPool> pool, ThreadPool::create({.threads = threads, .pin = true}));
  return Bench{roof, std::move(pool)};
}

// The roofs a run on `threads` threads is judged against: one thread's, or all threads'.
inline double read_roof_gbps(const Roofline& r, int threads) {
  return threads == 1 ? r.read_bw_1t.median : r.read_bw_all.median;
}
inline double fma_roof_gflops(const Roofline& r, int threads) {
  return threads == 1 ? r.fp32_fma_1t.median : r.fp32_fma_all.median;
}

// Calls call() once untimed, then repeatedly until sample_ms have passed; seconds per call.
template <class Call>
double seconds_per_call(Call&& call, double sample_ms) {
  call();
  int64_t calls = 0;
  const int64_t t0 = now_ns();
  int64_t t1 = t0;
  do {
    call();
    ++calls;
    t1 = now_ns();
  } while (double(t1 - t0) < sample_ms * 1e6);
  return double(t1 - t0) * 1e-9 / double(calls);
}

inline double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

}  // namespace recur::bench
