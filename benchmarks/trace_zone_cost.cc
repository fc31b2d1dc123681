// Cost of a tracer zone (begin + end), enabled and disabled, beside its floor and baseline.
//
//   build/benchmarks/bench_trace_zone_cost [--rounds N] [--zones M]
//
// Per round, in a rotated order: an empty loop, a loop of one rdtsc, a loop of two rdtsc (a
// zone's two clock reads, the floor of any begin/end timer), RECUR_ZONE disabled, RECUR_ZONE
// enabled on 1 thread, and RECUR_ZONE enabled on 2 threads at once (ns per zone per thread).
// Enabled runs reuse the chunks reset() keeps (the steady state); the very first enabled pass,
// with fresh buffers and page faults, is reported on its own.
// Reports the median and [min, max] of ns per zone over the rounds.
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

#include <fmt/format.h>

#include "trace/trace.h"

namespace {

using Clock = std::chrono::steady_clock;

double ns_since(Clock::time_point t0) {
  return double(std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t0).count());
}

inline void barrier_compiler() { asm volatile("" ::: "memory"); }

__attribute__((noinline)) double empty_loop(int n) {
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) barrier_compiler();
  return ns_since(t0) / n;
}

__attribute__((noinline)) double rdtsc_loop(int n, int reads) {
  uint64_t sink = 0;
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    sink += __rdtsc();
    if (reads == 2) sink += __rdtsc();
    barrier_compiler();
  }
  double r = ns_since(t0) / n;
  if (sink == 42) std::puts("");
  return r;
}

__attribute__((noinline)) double zone_loop(int n) {
  auto t0 = Clock::now();
  for (int i = 0; i < n; ++i) {
    RECUR_ZONE("bench_zone");
    barrier_compiler();
  }
  return ns_since(t0) / n;
}

double zone_threads(int n, int threads) {
  std::vector<double> per(static_cast<size_t>(threads), 0.0);
  std::atomic<int> ready{0};
  std::vector<std::thread> ts;
  for (int k = 0; k < threads; ++k) {
    ts.emplace_back([&, k] {
      ready.fetch_add(1);
      while (ready.load() < threads) {
      }
      per[size_t(k)] = zone_loop(n);
    });
  }
  for (auto& t : ts) t.join();
  double s = 0;
  for (double v : per) s += v;
  return s / threads;
}

struct Series {
  std::string name;
  std::function<double()> run;
  std::vector<double> samples;
};

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
  double cold = zone_loop(zones);
  set_enabled(false);
  auto enabled = [&](int threads) {
    reset();
    set_enabled(true);
    double r = threads == 1 ? zone_loop(zones) : zone_threads(zones, threads);
    set_enabled(false);
    return r;
  };
  std::vector<Series> series = {
      {"empty loop", [&] { return empty_loop(zones); }, {}},
      {"rdtsc x1", [&] { return rdtsc_loop(zones, 1); }, {}},
      {"rdtsc x2 (a zone's clock reads)", [&] { return rdtsc_loop(zones, 2); }, {}},
      {"zone, disabled", [&] { return zone_loop(zones); }, {}},
      {"zone, enabled, 1 thread", [&] { return enabled(1); }, {}},
      {"zone, enabled, 2 threads (per thread)", [&] { return enabled(2); }, {}},
  };
  for (int r = 0; r < rounds; ++r) {
    for (size_t k = 0; k < series.size(); ++k) {
      Series& s = series[(k + size_t(r)) % series.size()];
      s.samples.push_back(s.run());
    }
  }
  EventTable check = capture();  // the last enabled pass really recorded every zone
  reset();
  fmt::print("trace zone cost: {} zones per sample, {} interleaved rounds\n", zones, rounds);
  fmt::print("first enabled pass (fresh buffers, page faults included): {:.2f} ns per zone\n", cold);
  fmt::print("last pass kept {} events, dropped {}\n", check.size(), check.info().dropped_events);
  fmt::print("| series | ns per zone (median) | [min .. max] |\n| --- | --- | --- |\n");
  for (Series& s : series) {
    std::sort(s.samples.begin(), s.samples.end());
    fmt::print("| {} | {:.2f} | {:.2f} .. {:.2f} |\n", s.name, s.samples[s.samples.size() / 2],
               s.samples.front(), s.samples.back());
  }
  return 0;
}
