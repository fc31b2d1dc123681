// ThreadPool: a fixed set of workers, optionally pinned one per core, that run parallel_for
// with static partitioning.
//
// Static partitioning means range [0, n) is always split the same way for the same n and pool
// size (static_chunk()), so a kernel's floating-point results do not depend on scheduling.
// The calling thread works too: it runs chunk 0, workers 1..size()-1 run the rest. Each call
// waits for every worker, so a worker that lost its CPU to another process holds it up.
// parallel_claim() instead hands chunks out from a counter to whoever is awake and waits only
// for workers that took one: for work whose results do not depend on who computes a chunk
// (each output computed whole by one thread), it does not stall when a worker is descheduled.
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
  // How long a worker (and the caller, waiting for workers) polls for the next job or the
  // last chunk before sleeping on the futex. Decode hands out a GEMV every few tens of µs,
  // and each futex sleep costs a wake-up of 5-50 µs on a VM (docs/performance.md, "Pool
  // threads that poll"). 0: sleep at once. Ignored when the pool has more threads than allowed CPUs
  // (spinning would take the CPU from a thread with work).
  int spin_us = 0;
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
  // Whether waits poll before sleeping (spin_us > 0 and no more threads than allowed CPUs).
  bool spins() const { return spin_ns_ > 0; }
  // CPU each worker is pinned to (-1 where not pinned); index 0 is the caller, never pinned.
  const std::vector<int>& pinned_cpus() const { return pinned_cpus_; }

  // Calls fn(begin, end, worker) for each non-empty static_chunk(n, size(), worker) and
  // returns when all have finished.
  void parallel_for(int64_t n, const RangeFn& fn);
  // Calls fn(worker) once on every worker (0..size()-1), e.g. to set up per-thread state.
  void run_on_all(const std::function<void(int worker)>& fn);
  // Calls fn(chunk, worker) exactly once for every chunk in [0, chunks), in claim order, on the
  // caller and whichever workers wake while chunks are left; returns when every chunk has
  // finished. A worker that wakes after the last chunk was claimed touches nothing and is not
  // waited for. Which worker runs a chunk varies from call to call.
  using ChunkFn = std::function<void(int64_t chunk, int worker)>;
  void parallel_claim(int64_t chunks, const ChunkFn& fn);

 private:
  explicit ThreadPool(int size);
  void worker_loop(int worker);
  void dispatch(int64_t n, const RangeFn* fn);
  uint32_t next_generation(bool claim) const;  // the job count + 1, with the kind in bit 0
  void publish(uint32_t generation);
  void join_claim(uint32_t generation, int worker);
  void run_claims(int worker);
  // Returns once `word` differs from `old`: polls for spin_ns_, then sleeps on the futex.
  template <class T>
  T await_change(const std::atomic<T>& word, T old) const;

  const int size_;
  int64_t spin_ns_ = 0;
  std::vector<std::thread> threads_;
  std::vector<int> pinned_cpus_;
  std::mutex submit_mutex_;  // serializes parallel_for callers

  // The current job, published by a new generation_: job count << 1 | 1 for a claim job (one
  // load gives a worker the job and its kind).
  const RangeFn* job_fn_ = nullptr;
  int64_t job_n_ = 0;
  alignas(64) std::atomic<uint32_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};
  // A claim job: its fields, valid while claim_state_ names its generation and is not closed.
  // claim_state_ = generation << 32 | closed << 31 | workers inside; a worker enters with one
  // compare-exchange against exactly that word, so it never touches a finished or newer job.
  const ChunkFn* claim_fn_ = nullptr;
  int64_t claim_chunks_ = 0;
  alignas(64) std::atomic<int64_t> claim_next_{0};
  alignas(64) std::atomic<uint64_t> claim_state_{0};
  std::atomic<bool> stop_{false};
};

// The CPUs this process may run on (sched_getaffinity), ascending.
std::vector<int> allowed_cpus();

}  // namespace recur
