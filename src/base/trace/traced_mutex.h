// TracedMutex: a std::mutex that records lock events while tracing is on.
//
// lock() first tries the lock; if that fails (contention), it records a wait zone from
// wait-begin to acquired, with the tid of the thread holding the mutex when the wait began.
// unlock() records a hold zone from acquired to released. Both are X events named after the
// mutex, category "lock_wait" or "lock_held", with arg "mutex" (and "holder_tid" for waits),
// so an analysis can find who waited on whom, for how long. Uncontended acquisitions record no
// wait event. Meets the Lockable requirements (std::lock_guard, std::unique_lock).
//
// Thread-safety: as std::mutex. The name must be a string literal (only the pointer is kept).
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>

#include "trace/external_lock.h"
#include "trace/trace.h"

namespace recur::trace {

inline constexpr const char* kLockWaitCategory = "lock_wait";
inline constexpr const char* kLockHeldCategory = "lock_held";

class TracedMutex {
 public:
  explicit TracedMutex(const char* name) : name_(name) {}
  TracedMutex(const TracedMutex&) = delete;
  TracedMutex& operator=(const TracedMutex&) = delete;

  void lock() {
    if (!enabled()) [[likely]] {
      mu_.lock();
      acquired_ = 0;
      return;
    }
    if (!mu_.try_lock()) {
      uint64_t wait_begin = detail::ticks();
      uint32_t holder = holder_tid_.load(std::memory_order_relaxed);
      mu_.lock();
      acquired_ = detail::ticks();
      record(RawKind::kLockWait, wait_begin, acquired_, holder);
    } else {
      acquired_ = detail::ticks();
    }
    holder_tid_.store(current_tid(), std::memory_order_relaxed);
  }

  bool try_lock() {
    if (!mu_.try_lock()) return false;
    acquired_ = enabled() ? detail::ticks() : 0;
    if (acquired_ != 0) holder_tid_.store(current_tid(), std::memory_order_relaxed);
    return true;
  }

  void unlock() {
    uint64_t acquired = acquired_;
    if (acquired != 0) {
      holder_tid_.store(0, std::memory_order_relaxed);
      uint64_t released = detail::ticks();
      mu_.unlock();
      record(RawKind::kLockHold, acquired, released, 0);
      return;
    }
    mu_.unlock();
  }

  const char* name() const { return name_; }

 private:
  static uint32_t current_tid() { return current_thread_tid(); }
  void record(RawKind kind, uint64_t t0, uint64_t t1, uint32_t aux) { detail::record_lock_event(kind, name_, t0, t1, aux); }

  std::mutex mu_;
  const char* name_;
  uint64_t acquired_ = 0;  // guarded by mu_
  std::atomic<uint32_t> holder_tid_{0};
};

}  // namespace recur::trace
