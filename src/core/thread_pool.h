// ThreadPool: a fixed set of workers, optionally pinned one per core, that run parallel_for
// with static partitioning.
//
// Static partitioning means range [0, n) is always split the same way for the same n and pool
// size (static_chunk()), so a kernel's floating-point results do not depend on scheduling.
// The calling thread works too: it runs chunk 0, workers 1..size()-1 run the rest.
// parallel_for() called from inside a pool task runs serially on that thread (no deadlock).
// Thread-safety: one parallel_for at a time per pool; calls from several threads are serialized.
// Tasks must not throw (an escaping exception terminates, as in std::thread).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "core/status.h"

namespace recur {

struct ThreadPoolOptions {
  int threads = 0;   // total parallelism including the caller; 0 = every CPU this process may use
  bool pin = true;   // pin worker i to the i-th CPU of the process's affinity mask
};

// [begin, end) of chunk `index` when n items are split into `parts` nearly equal chunks;
// the first n % parts chunks get one extra item.
struct Range {
  int64_t begin = 0;
  int64_t end = 0;
};
Range static_chunk(int64_t n, int parts, int index);

class ThreadPool {
 public:
  using RangeFn = std::function<void(int64_t begin, int64_t end, int worker)>;

  static Result<std::unique_ptr<ThreadPool>> create(const ThreadPoolOptions& options);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return size_; }
  // CPU each worker is pinned to (-1 where not pinned); index 0 is the caller, never pinned.
  const std::vector<int>& pinned_cpus() const { return pinned_cpus_; }

  // Calls fn(begin, end, worker) for each non-empty static_chunk(n, size(), worker) and
  // returns when all have finished.
  void parallel_for(int64_t n, const RangeFn& fn);
  // Calls fn(worker) once on every worker (0..size()-1), e.g. to set up per-thread state.
  void run_on_all(const std::function<void(int worker)>& fn);

 private:
  explicit ThreadPool(int size);
  void worker_loop(int worker);
  void dispatch(int64_t n, const RangeFn* fn);

  const int size_;
  std::vector<std::thread> threads_;
  std::vector<int> pinned_cpus_;
  std::mutex submit_mutex_;  // serializes parallel_for callers

  // The current job, published by bumping generation_.
  const RangeFn* job_fn_ = nullptr;
  int64_t job_n_ = 0;
  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};
  std::atomic<bool> stop_{false};
};

// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();

}  // namespace recur
