// Lock events for locks recur does not own (the Python GIL): the same `lock_wait` / `lock_held`
// zones TracedMutex records (traced_mutex.h), emitted by code that measured the wait or hold
// itself, so the lock analysis (analyze/locks.h) treats them like any other mutex.
//
//   uint64_t t0 = recur::trace::lock_clock();
//   acquire_the_lock();
//   recur::trace::record_lock_wait("GIL", t0, recur::trace::lock_clock(), holder_tid);
//
// The knob python.release_gil (component lock:gil) is registered here, so `recur knobs`, the
// gate and the agent see it without linking Python; the bindings (python/) read it.
//
// Thread-safety: the record functions write the calling thread's buffer (any thread).
// The mutex name must be a string literal (only the pointer is kept).
#pragma once

#include <cstdint>

#include "trace/recorder.h"

namespace recur::trace {

inline constexpr const char* kReleaseGilKnob = "python.release_gil";

// The tracer's clock (raw ticks; recorded as-is, converted at capture).
uint64_t lock_clock();
// The calling thread's kernel tid, as tracks and holder_tid name threads.
uint32_t current_thread_tid();
// A wait from t0 to t1 (acquired) on `mutex`, while thread `holder_tid` held it (0: unknown).
// Nothing is recorded while tracing is off.
void record_lock_wait(const char* mutex, uint64_t t0, uint64_t t1, uint32_t holder_tid);
// A hold of `mutex` from t0 (acquired) to t1 (released) by the calling thread.
void record_lock_hold(const char* mutex, uint64_t t0, uint64_t t1);

namespace detail {
// One kLockWait or kLockHold slot (TracedMutex's and the functions above); tracing must be on.
inline void record_lock_event(RawKind kind, const char* mutex, uint64_t t0, uint64_t t1, uint32_t aux) {
  RawEvent* e = reserve(1);
  if (e == nullptr) return;
  e->kind = kind;
  e->nargs = 0;
  e->aux = aux;
  e->t0 = t0;
  e->value = t1;
  e->ptr = mutex;
  publish();
}
}  // namespace detail

}  // namespace recur::trace
