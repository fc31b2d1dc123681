// Cost of a tracer zone (begin + end), enabled and disabled, beside its floor and baseline.
//
//   build/benchmarks/bench_trace_zone_cost [--rounds N] [--zones M]
//
// Per round, in a rotated order: an empty loop, a loop of one rdtsc, a loop of two rdtsc (a
// zone's two clock reads, the floor of any begin/end timer) on 1 and on 2 threads at once,
// RECUR_ZONE disabled, RECUR_ZONE enabled on 1 thread, and RECUR_ZONE enabled on 2 threads at
// once (ns per zone per thread). Enabled runs reuse the chunks reset() keeps (the steady
// state); the very first enabled pass, with fresh buffers and page faults, is reported on its
// own. Each sample is timed twice: wall clock, and the thread's CPU time
// (CLOCK_THREAD_CPUTIME_ID), which leaves out time the thread spent descheduled, so 2-thread
// figures stay readable on a loaded 2-core machine. Reports the median and [min .. max] of ns
// per zone over the rounds, and the zone's cost over the rdtsc-pair floor.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <time.h>

#include <fmt/format.h>

#include "bench_process.h"
#include "trace/trace.h"

namespace {

using Clock = std::chrono::steady_clock;

// ns per iteration of one timed loop: wall clock and this thread's CPU time.
struct Sample {
  double wall = 0, cpu = 0;
};

double thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
}

// Times body(n) on this thread.
template <typename Body>
Sample timed(int n, Body body) {
  double c0 = thread_cpu_ns();
  auto t0 = Clock::now();
  body(n);
  double wall = double(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
  double cpu = thread_cpu_ns() - c0;
  return {wall / n, cpu / n};
}

inline void barrier_compiler() { asm volatile("" ::: "memory"); }

__attribute__((noinline)) void empty_loop(int n) {
  for (int i = 0; i < n; ++i) barrier_compiler();
}

__attribute__((noinline)) void rdtsc_loop(int n, int reads) {
  uint64_t sink = 0;
  for (int i = 0; i < n; ++i) {
    sink += __rdtsc();
    if (reads == 2) sink += __rdtsc();
    barrier_compiler();
  }
  if (sink == 42) std::puts("");
}

__attribute__((noinline)) void zone_loop(int n) {
  for (int i = 0; i < n; ++i) {
    RECUR_ZONE("bench_zone");
    barrier_compiler();
  }
}

// Runs body on `threads` threads started together; the mean per-thread sample.
template <typename Body>
Sample on_threads(int n, int threads, Body body) {
  if (threads == 1) return timed(n, body);
  std::vector<Sample> per(static_cast<size_t>(threads));
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int k = 0; k < threads; ++k) {
    ts.emplace_back([&, k] {
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      per[size_t(k)] = timed(n, body);
    });
  }
  for (auto& t : ts) t.join();
  Sample s;
  for (const Sample& v : per) {
    s.wall += v.wall / threads;
    s.cpu += v.cpu / threads;
  }
  return s;
}

struct Series {
  std::string name;
  std::function<Sample()> run;
  std::vector<double> wall, cpu;
};

using recur::bench::Stat;
using recur::bench::stat;

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7, zones = 1 << 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--rounds") == 0) rounds = std::max(5, std::atoi(argv[i + 1]));
    if (std::strcmp(argv[i], "--zones") == 0) zones = std::max(1000, std::atoi(argv[i + 1]));
  }
  using namespace recur::trace;
  set_config(TraceConfig{.max_events_per_thread = uint64_t(zones)});
  // First pass: fresh chunks (allocation and page faults included), what a program's first
  // recording pays. Later passes reuse the chunks reset() keeps: the steady state.
  reset();
  set_enabled(true);  // calibrates the clock
  Sample cold = timed(zones, zone_loop);
  set_enabled(false);
  auto enabled = [&](int threads) {
    reset();
    set_enabled(true);
    Sample r = on_threads(zones, threads, zone_loop);
    set_enabled(false);
    return r;
  };
  enabled(2);  // pages in the second thread's chunks too, so every round is the steady state
  auto rdtsc2 = [](int n) { rdtsc_loop(n, 2); };
  std::vector<Series> series = {
      {"empty loop", [&] { return timed(zones, empty_loop); }, {}, {}},
      {"rdtsc x1", [&] { return timed(zones, [](int n) { rdtsc_loop(n, 1); }); }, {}, {}},
      {"rdtsc x2 (a zone's clock reads), 1 thread", [&] { return timed(zones, rdtsc2); }, {}, {}},
      {"rdtsc x2, 2 threads (per thread)", [&] { return on_threads(zones, 2, rdtsc2); }, {}, {}},
      {"zone, disabled", [&] { return timed(zones, zone_loop); }, {}, {}},
      {"zone, enabled, 1 thread", [&] { return enabled(1); }, {}, {}},
      {"zone, enabled, 2 threads (per thread)", [&] { return enabled(2); }, {}, {}},
  };
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < series.size(); ++k) {
      Series& s = series[(k + size_t(r)) % series.size()];
      Sample v = s.run();
      s.wall.push_back(v.wall);
      s.cpu.push_back(v.cpu);
    }
  }
  EventTable check = capture();  // the last enabled pass really recorded every zone
  reset();
  fmt::print("trace zone cost: {} zones per sample, {} interleaved rounds (series rotated)\n", zones, rounds);
  fmt::print("first enabled pass (fresh buffers, page faults included): {:.2f} ns per zone wall, {:.2f} CPU\n",
             cold.wall, cold.cpu);
  fmt::print("last pass kept {} events, dropped {}\n\n", check.size(), check.info().dropped_events);
  fmt::print("| series | wall ns (median) | [min .. max] | thread-CPU ns (median) | [min .. max] |\n"
             "| --- | --- | --- | --- | --- |\n");
  for (Series& s : series) {
    Stat w = stat(s.wall), c = stat(s.cpu);
    fmt::print("| {} | {:.2f} | {:.2f} .. {:.2f} | {:.2f} | {:.2f} .. {:.2f} |\n", s.name, w.med, w.lo, w.hi,
               c.med, c.lo, c.hi);
  }
  // The zone over its floor, per round (the two ran in the same round), then the median.
  auto over = [&](size_t zone, size_t floor) {
    std::vector<double> d;
    for (int r = 0; r < rounds; ++r) d.push_back(series[zone].cpu[size_t(r)] - series[floor].cpu[size_t(r)]);
    Stat st = stat(d);
    return fmt::format("{:.2f} ns [{:.2f} .. {:.2f}]", st.med, st.lo, st.hi);
  };
  fmt::print("\nzone minus rdtsc pair (thread-CPU ns, per round): 1 thread {}, 2 threads {}; "
             "disabled minus empty loop: {}\n", over(5, 2), over(6, 3), over(4, 0));
  return 0;
}
