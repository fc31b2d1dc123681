// Cost of one tracer zone (begin + end), enabled and disabled, on 1 and 2 threads, against a
// bare loop and a loop that reads the TSC twice (the floor of any timestamped zone).
//
//   build/benchmarks/bench_trace_zone_cost [--rounds N]
//
// Each round runs every case once, in rotated order; each case times `kIters` iterations and
// reports ns per iteration. Prints the median and [min, max] over rounds, and the zone cost
// minus the bare loop. The buffer is cleared between cases so memory stays bounded.
#include <x86intrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/clock.h"
#include "trace/trace.h"

namespace {

constexpr int kIters = 200000;
volatile uint64_t g_sink;

void bare_loop() {
  for (int i = 0; i < kIters; ++i) {
    g_sink = g_sink + 1;
  }
}
void two_rdtsc() {
  for (int i = 0; i < kIters; ++i) {
    g_sink = g_sink + __rdtsc();
    g_sink = g_sink + __rdtsc();
  }
}
void zones() {
  for (int i = 0; i < kIters; ++i) {
    RECUR_ZONE("bench");
    g_sink = g_sink + 1;
  }
}

// ns per iteration of `body` on `threads` threads (the slowest thread's time).
double time_case(const std::function<void()>& body, int threads, bool enabled) {
  recur::trace::clear();
  if (enabled) recur::trace::start();
  else recur::trace::stop();
  std::vector<double> ns(static_cast<size_t>(threads));
  std::vector<std::thread> ts;
  for (int t = 0; t < threads; ++t)
    ts.emplace_back([&, t] {
      int64_t t0 = recur::now_ns();
      body();
      ns[size_t(t)] = double(recur::now_ns() - t0);
    });
  for (auto& t : ts) t.join();
  recur::trace::stop();
  return *std::max_element(ns.begin(), ns.end()) / kIters;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 9;
  if (argc == 3 && std::string(argv[1]) == "--rounds") rounds = std::atoi(argv[2]);
  if (rounds < 5) {
    std::fprintf(stderr, "usage: %s [--rounds N>=5]\n", argv[0]);
    return 2;
  }
  struct Case {
    std::string name;
    std::function<void()> body;
    int threads;
    bool enabled;
    std::vector<double> ns;
  };
  std::vector<Case> cases;
  for (int threads : {1, 2}) {
    cases.push_back({fmt::format("bare loop, {}t", threads), bare_loop, threads, false, {}});
    cases.push_back({fmt::format("2x rdtsc, {}t", threads), two_rdtsc, threads, false, {}});
    cases.push_back({fmt::format("zone disabled, {}t", threads), zones, threads, false, {}});
    cases.push_back({fmt::format("zone enabled, {}t", threads), zones, threads, true, {}});
  }
  for (auto& c : cases) time_case(c.body, c.threads, c.enabled);  // warm-up
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < cases.size(); ++i) {
      Case& c = cases[(i + size_t(r)) % cases.size()];
      c.ns.push_back(time_case(c.body, c.threads, c.enabled));
    }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  fmt::print("tracer zone cost, {} iterations per case, {} rounds interleaved (ns per iteration)\n", kIters, rounds);
  for (const auto& c : cases)
    fmt::print("  {:<24} {:7.2f}  [{:.2f} .. {:.2f}]\n", c.name, med(c.ns), *std::min_element(c.ns.begin(), c.ns.end()),
               *std::max_element(c.ns.begin(), c.ns.end()));
  for (int t = 0; t < 2; ++t) {
    double bare = med(cases[size_t(4 * t)].ns);
    fmt::print("{} thread{}: zone enabled costs {:.2f} ns (begin+end), disabled {:.2f} ns, over the bare loop\n", t + 1,
               t ? "s" : "", med(cases[size_t(4 * t + 3)].ns) - bare, med(cases[size_t(4 * t + 2)].ns) - bare);
  }
  return 0;
}
