// STREAM-style memory bandwidth, side by side with recur sysinfo's read-bandwidth probe.
//
//   build/benchmarks/bench_stream_like [--rounds N] [--mib-per-array M]
//
// Kernels (STREAM's definitions and byte counts; stores are counted once, write-allocate
// traffic is not): copy a=b (16 B/elem), scale a=s*b (16), add a=b+c (24), triad a=b+s*c (24),
// plus read-only sum (8), the closest peer of recur's probe. Each round runs every kernel on
// 1 thread and on all threads, in a rotated order, so drift hits all of them alike. Reports the
// median and [min, max] over the rounds, and recur's probe as a fraction of each STREAM figure.
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/thread_pool.h"
#include "probe/roofline_kernels.h"

namespace {

using namespace recur;

struct Arrays {
  size_t n = 0;
  double *a = nullptr, *b = nullptr, *c = nullptr;
};

double* alloc_array(size_t n) {
  size_t bytes = (n * sizeof(double) + (2 << 20) - 1) / (2 << 20) * (2 << 20);
  auto* p = static_cast<double*>(std::aligned_alloc(2 << 20, bytes));
  if (!p) {
    std::fprintf(stderr, "bench_stream_like: cannot allocate %zu MiB\n", bytes >> 20);
    std::exit(1);
  }
  madvise(p, bytes, MADV_HUGEPAGE);
  return p;
}

volatile double g_sink;

struct Kernel {
  std::string name;
  double bytes_per_elem;
  std::function<void(const Arrays&, size_t, size_t)> body;
};

std::vector<Kernel> kernels() {
  const double s = 3.0;
  return {
      {"copy", 16, [](const Arrays& x, size_t b, size_t e) { for (size_t i = b; i < e; ++i) x.a[i] = x.b[i]; }},
      {"scale", 16, [s](const Arrays& x, size_t b, size_t e) { for (size_t i = b; i < e; ++i) x.a[i] = s * x.b[i]; }},
      {"add", 24, [](const Arrays& x, size_t b, size_t e) { for (size_t i = b; i < e; ++i) x.a[i] = x.b[i] + x.c[i]; }},
      {"triad", 24, [s](const Arrays& x, size_t b, size_t e) { for (size_t i = b; i < e; ++i) x.a[i] = x.b[i] + s * x.c[i]; }},
      {"sum (read)", 8,
       [](const Arrays& x, size_t b, size_t e) {
         const auto* w = reinterpret_cast<const int64_t*>(x.b);
         int64_t t = 0;
         for (size_t i = b; i < e; ++i) t += w[i];
         g_sink = g_sink + double(t);
       }},
      {"recur sysinfo probe", 8,
       [](const Arrays& x, size_t b, size_t e) {
         size_t first = b / 32 * 32, last = e / 32 * 32;  // 256-byte blocks
         g_sink = g_sink + double(roofline::kRead.get()(reinterpret_cast<const std::byte*>(x.b + first),
                                                          (last - first) * sizeof(double)));
       }},
  };
}

double run_gbs(ThreadPool& pool, int threads, const Arrays& x, const Kernel& k) {
  int64_t t0 = now_ns();
  pool.parallel_for(threads, [&](int64_t t, int64_t, int) {
    Range r = static_chunk(int64_t(x.n / 32), threads, int(t));  // whole 256-byte blocks
    k.body(x, size_t(r.begin) * 32, size_t(r.end) * 32);
  });
  return k.bytes_per_elem * double(x.n) / double(now_ns() - t0);
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7;
  size_t mib = 1024;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (a == "--mib-per-array" && i + 1 < argc) mib = size_t(std::atol(argv[++i]));
    else {
      std::fprintf(stderr, "usage: %s [--rounds N>=5] [--mib-per-array M]\n", argv[0]);
      return 2;
    }
  }
  if (rounds < 5 || mib < 64) {
    std::fprintf(stderr, "bench_stream_like: need --rounds >= 5 and --mib-per-array >= 64\n");
    return 2;
  }
  auto pool_or = ThreadPool::create({.threads = 0, .pin = true});
  if (!pool_or) return 1;
  ThreadPool& pool = **pool_or;
  const int all = pool.size();

  Arrays x;
  x.n = (mib << 20) / sizeof(double) / 32 * 32;
  x.a = alloc_array(x.n);
  x.b = alloc_array(x.n);
  x.c = alloc_array(x.n);
  pool.parallel_for(int64_t(x.n), [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i) x.a[i] = 1.0, x.b[i] = 2.0, x.c[i] = 0.5;
  });

  auto ks = kernels();
  std::map<std::pair<std::string, int>, std::vector<double>> samples;
  std::vector<int> thread_counts = {1};
  if (all > 1) thread_counts.push_back(all);
  for (auto& k : ks)
    for (int t : thread_counts) run_gbs(pool, t, x, k);  // warm-up
  for (int r = 0; r < rounds; ++r) {
    for (size_t j = 0; j < ks.size(); ++j) {
      const Kernel& k = ks[(j + size_t(r)) % ks.size()];  // rotate the order each round
      for (int t : thread_counts) samples[{k.name, t}].push_back(run_gbs(pool, t, x, k));
    }
  }

  auto stats = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return std::array<double, 3>{v[v.size() / 2], v.front(), v.back()};
  };
  fmt::print("STREAM-like bandwidth, {} MiB per array, {} rounds interleaved, GB/s (median [min..max])\n", mib,
             rounds);
  fmt::print("{:<22}", "kernel");
  for (int t : thread_counts) fmt::print(" {:>26}", fmt::format("{} thread{}", t, t == 1 ? "" : "s"));
  fmt::print("\n");
  for (auto& k : ks) {
    fmt::print("{:<22}", k.name);
    for (int t : thread_counts) {
      auto s = stats(samples[{k.name, t}]);
      fmt::print(" {:>26}", fmt::format("{:.1f} [{:.1f}..{:.1f}]", s[0], s[1], s[2]));
    }
    fmt::print("\n");
  }
  for (int t : thread_counts) {
    double probe = stats(samples[{"recur sysinfo probe", t}])[0];
    fmt::print("recur probe / STREAM, {} thread{}:", t, t == 1 ? "" : "s");
    for (auto& k : ks)
      if (k.name != "recur sysinfo probe") fmt::print("  {} {:.2f}", k.name, probe / stats(samples[{k.name, t}])[0]);
    fmt::print("\n");
  }
  return 0;
}
