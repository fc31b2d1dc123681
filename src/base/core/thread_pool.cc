#include "core/thread_pool.h"

#include <pthread.h>
#include <sched.h>

#include <chrono>

#include "core/log.h"

namespace recur {
namespace {

// Set while a thread runs a pool task, so nested parallel_for runs inline.
thread_local bool t_inside_pool_task = false;

bool pin_current_thread(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
}

}  // namespace

Range static_chunk(int64_t n, int parts, int index) {
  if (n <= 0 || parts <= 0) return {0, 0};
  int64_t base = n / parts, extra = n % parts;
  int64_t begin = index * base + (index < extra ? index : extra);
  int64_t len = base + (index < extra ? 1 : 0);
  return {begin, begin + len};
}

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    int n = int(std::thread::hardware_concurrency());
    for (int i = 0; i < (n > 0 ? n : 1); ++i) cpus.push_back(i);
    return cpus;
  }
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) cpus.push_back(i);
  return cpus;
}

Result<std::unique_ptr<ThreadPool>> ThreadPool::create(const ThreadPoolOptions& options) {
  if (options.threads < 0) return invalid_argument("thread pool size {} is negative", options.threads);
  if (options.threads > 1024) return invalid_argument("thread pool size {} exceeds 1024", options.threads);
  std::vector<int> cpus = allowed_cpus();
  int size = options.threads == 0 ? int(cpus.size()) : options.threads;
  if (options.spin_us < 0) return invalid_argument("thread pool spin {} us is negative", options.spin_us);
  std::unique_ptr<ThreadPool> pool(new ThreadPool(size));
  if (size <= int(cpus.size())) pool->spin_ns_ = int64_t(options.spin_us) * 1000;
  pool->pinned_cpus_.assign(size, -1);
  pool->threads_.reserve(size - 1);
  for (int w = 1; w < size; ++w) {
    int cpu = (options.pin && !cpus.empty()) ? cpus[w % cpus.size()] : -1;
    pool->threads_.emplace_back([p = pool.get(), w, cpu] {
      if (cpu >= 0 && !pin_current_thread(cpu)) LOG_DEBUG("thread pool: could not pin worker {} to cpu {}", w, cpu);
      p->worker_loop(w);
    });
    pool->pinned_cpus_[w] = cpu;
  }
  return pool;
}

ThreadPool::ThreadPool(int size) : size_(size < 1 ? 1 : size) {}

namespace {
constexpr uint64_t kClaimClosed = uint64_t{1} << 31;
constexpr uint64_t kClaimActive = kClaimClosed - 1;
}  // namespace

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  publish(next_generation(false));
  for (auto& t : threads_) t.join();
}

template <class T>
T ThreadPool::await_change(const std::atomic<T>& word, T old) const {
  T now = word.load(std::memory_order_acquire);
  if (now != old || spin_ns_ == 0) {
    if (now == old) word.wait(old, std::memory_order_acquire);
    return word.load(std::memory_order_acquire);
  }
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns_);
  for (uint32_t i = 1;; ++i) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    now = word.load(std::memory_order_acquire);
    if (now != old) return now;
    if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) break;
  }
  word.wait(old, std::memory_order_acquire);
  return word.load(std::memory_order_acquire);
}

// Only the thread holding submit_mutex_ (or the destructor) publishes.
uint32_t ThreadPool::next_generation(bool claim) const {
  return (((generation_.load(std::memory_order_relaxed) >> 1) + 1) << 1) | (claim ? 1u : 0u);
}

void ThreadPool::publish(uint32_t generation) {
  generation_.store(generation, std::memory_order_release);  // publishes the job's fields
  generation_.notify_all();
}

void ThreadPool::worker_loop(int worker) {
  uint32_t seen = 0;
  for (;;) {
    const uint32_t now = await_change(generation_, seen);
    if (now == seen) continue;  // spurious wake
    seen = now;
    if (stop_.load(std::memory_order_acquire)) return;
    if ((now & 1u) != 0) {
      join_claim(now, worker);
      continue;
    }
    Range r = static_chunk(job_n_, size_, worker);
    if (r.end > r.begin) {
      t_inside_pool_task = true;
      (*job_fn_)(r.begin, r.end, worker);
      t_inside_pool_task = false;
    }
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadPool::dispatch(int64_t n, const RangeFn* fn) {
  job_fn_ = fn;
  job_n_ = n;
  pending_.store(size_ - 1, std::memory_order_relaxed);
  publish(next_generation(false));

  Range r = static_chunk(n, size_, 0);
  if (r.end > r.begin) {
    t_inside_pool_task = true;
    (*fn)(r.begin, r.end, 0);
    t_inside_pool_task = false;
  }
  int left = pending_.load(std::memory_order_acquire);
  while (left != 0) left = await_change(pending_, left);
}

void ThreadPool::parallel_for(int64_t n, const RangeFn& fn) {
  if (n <= 0) return;
  if (t_inside_pool_task || size_ == 1) {
    // Nested call (or no workers): same chunks, run in order on this thread.
    for (int w = 0; w < size_; ++w) {
      Range r = static_chunk(n, size_, w);
      if (r.end > r.begin) fn(r.begin, r.end, w);
    }
    return;
  }
  std::lock_guard<std::mutex> lock(submit_mutex_);
  dispatch(n, &fn);
}

void ThreadPool::run_claims(int worker) {
  t_inside_pool_task = true;
  for (int64_t c = claim_next_.fetch_add(1, std::memory_order_relaxed); c < claim_chunks_;
       c = claim_next_.fetch_add(1, std::memory_order_relaxed))
    (*claim_fn_)(c, worker);
  t_inside_pool_task = false;
}

void ThreadPool::join_claim(uint32_t generation, int worker) {
  uint64_t s = claim_state_.load(std::memory_order_acquire);
  do {
    if ((s >> 32) != generation || (s & kClaimClosed) != 0) return;  // done or replaced: not ours to touch
  } while (!claim_state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire));
  run_claims(worker);
  const uint64_t after = claim_state_.fetch_sub(1, std::memory_order_acq_rel) - 1;
  if ((after & kClaimClosed) != 0 && (after & kClaimActive) == 0) claim_state_.notify_all();
}

void ThreadPool::parallel_claim(int64_t chunks, const ChunkFn& fn) {
  if (chunks <= 0) return;
  if (t_inside_pool_task || size_ == 1) {
    for (int64_t c = 0; c < chunks; ++c) fn(c, 0);
    return;
  }
  std::lock_guard<std::mutex> lock(submit_mutex_);
  claim_fn_ = &fn;
  claim_chunks_ = chunks;
  claim_next_.store(0, std::memory_order_relaxed);
  const uint32_t generation = next_generation(true);
  claim_state_.store(uint64_t(generation) << 32, std::memory_order_release);  // open, nobody inside
  publish(generation);
  run_claims(0);
  // Close: no worker enters any more; wait for those inside to finish their chunks.
  uint64_t s = claim_state_.fetch_or(kClaimClosed, std::memory_order_acq_rel) | kClaimClosed;
  while ((s & kClaimActive) != 0) s = await_change(claim_state_, s);
}

void ThreadPool::run_on_all(const std::function<void(int worker)>& fn) {
  parallel_for(size_, [&fn](int64_t begin, int64_t end, int) {
    for (int64_t w = begin; w < end; ++w) fn(int(w));
  });
}

}  // namespace recur
