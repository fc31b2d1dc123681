// ThreadPool::parallel_claim against the parallel_for rendezvous it replaced in the GEMV path:
// the same chunks of work (a fixed amount of arithmetic each, about the size of a decode GEMV's
// chunk), handed out from a counter either inside parallel_for (every worker must arrive before
// the call returns) or by parallel_claim (only workers that took a chunk are waited for).
// Interleaved A B / B A rounds, medians with [min, max] of the per-call time, with and without a
// competing busy thread pinned to the last CPU (a neighbour taking one vCPU, as on a shared VM).
//   build/benchmarks/bench_thread_pool_claim [--rounds 7] [--calls 2000] [--chunks 16] [--work 2000]
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/thread_pool.h"

namespace {

using Clock = std::chrono::steady_clock;

// A chunk's work: `iters` dependent multiply-adds (no memory traffic), kept alive by `sink`.
std::atomic<double> sink{0};
void chunk_work(int64_t iters) {
  double x = 1.0;
  for (int64_t i = 0; i < iters; ++i) x = x * 0.999999 + 1e-9;
  sink.store(x, std::memory_order_relaxed);
}

double us_per_call(recur::ThreadPool& pool, bool claim, int calls, int64_t chunks, int64_t work) {
  const auto t0 = Clock::now();
  for (int c = 0; c < calls; ++c) {
    if (claim) {
      pool.parallel_claim(chunks, [&](int64_t, int) { chunk_work(work); });
    } else {
      std::atomic<int64_t> next{0};
      pool.parallel_for(pool.size(), [&](int64_t, int64_t, int) {
        for (int64_t k = next.fetch_add(1); k < chunks; k = next.fetch_add(1)) chunk_work(work);
      });
    }
  }
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count() / calls;
}

struct Summary {
  double median, lo, hi;
};
Summary summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7, calls = 2000;
  int64_t chunks = 16, work = 2000;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i];
    const long long v = std::atoll(argv[i + 1]);
    if (k == "--rounds") rounds = int(v);
    else if (k == "--calls") calls = int(v);
    else if (k == "--chunks") chunks = v;
    else if (k == "--work") work = v;
    else {
      std::fprintf(stderr, "unknown flag %s (--rounds --calls --chunks --work)\n", k.c_str());
      return 2;
    }
  }
  if (rounds < 1 || calls < 1 || chunks < 1 || work < 0) {
    std::fprintf(stderr, "--rounds, --calls, --chunks must be >= 1 and --work >= 0\n");
    return 2;
  }
  auto pool = recur::ThreadPool::create({.threads = 2, .pin = true});
  if (!pool) {
    std::fprintf(stderr, "%s\n", pool.error().message().c_str());
    return 1;
  }
  const std::vector<int> cpus = recur::allowed_cpus();
  std::printf("thread pool of 2 (workers pinned to cpus %d, %d); %lld chunks of %lld iterations per call, %d calls "
              "per sample, %d interleaved rounds\n",
              cpus.empty() ? -1 : cpus[0], cpus.size() > 1 ? cpus[1] : -1, (long long)chunks, (long long)work, calls,
              rounds);
  for (bool neighbour : {false, true}) {
    std::atomic<bool> stop{false};
    std::thread busy;
    if (neighbour) {
      busy = std::thread([&] {
        if (cpus.size() > 1) {
          cpu_set_t set;
          CPU_ZERO(&set);
          CPU_SET(cpus.back(), &set);
          pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
        }
        while (!stop.load(std::memory_order_relaxed)) {
        }
      });
    }
    std::vector<double> rendezvous, claim, ratio;
    for (int r = 0; r < rounds; ++r) {
      double a, b;
      if (r % 2 == 0) {
        a = us_per_call(**pool, false, calls, chunks, work);
        b = us_per_call(**pool, true, calls, chunks, work);
      } else {
        b = us_per_call(**pool, true, calls, chunks, work);
        a = us_per_call(**pool, false, calls, chunks, work);
      }
      rendezvous.push_back(a);
      claim.push_back(b);
      ratio.push_back(a / b);
    }
    stop = true;
    if (busy.joinable()) busy.join();
    const Summary a = summarize(rendezvous), b = summarize(claim), q = summarize(ratio);
    std::printf("%-34s parallel_for %8.1f us [%.1f, %.1f]   parallel_claim %8.1f us [%.1f, %.1f]   "
                "speedup %.2fx [%.2f, %.2f]\n",
                neighbour ? "busy thread on the last CPU:" : "no neighbour:", a.median, a.lo, a.hi, b.median, b.lo, b.hi,
                q.median, q.lo, q.hi);
  }
  return 0;
}
