// How binding calls run C++ with respect to the GIL, and the GIL traced as a lock.
//
// Every long C++ call of the bindings goes through run_cpp(), in a zone named after the call
// (the GIL-free interval of a released call; the whole call when it holds the GIL):
//   - compute calls (forward, prefill, decode, generate): with python.release_gil on they release
//     the GIL while C++ runs; off, they hold it, and the hold is recorded as a `lock_held` zone of
//     mutex "GIL" on the caller's track;
//   - blocking waits (transfer waits, KV receives): always release it (a wait that holds the GIL
//     stalls every Python thread for another thread's work), and are where GIL waits are seen.
// After a release, re-acquiring (PyEval_RestoreThread) that blocked for kGilWaitRecordNs or more
// is recorded as a `lock_wait` zone of mutex "GIL" with holder_tid = the thread the guards last
// saw take the GIL and not give it back (0 if none: the holder took it outside the guards, e.g.
// to run Python code). So `recur analyze locks` shows which thread waited on the GIL while which
// thread held it inside which C++ zone.
//
// Thread-safety: call with the GIL held, from any Python thread.
#pragma once

#include <Python.h>

#include <atomic>
#include <cstdint>
#include <utility>

#include "trace/external_lock.h"
#include "trace/trace.h"

namespace recur::py {

inline constexpr const char* kGilMutex = "GIL";
inline constexpr int64_t kGilWaitRecordNs = 5000;

enum class GilPolicy { kCompute, kWait };

// The knob python.release_gil as the bindings apply it (set through recur.set_knob).
bool release_gil();
void set_release_gil(bool on);

// Names the calling Python thread's trace track after threading.current_thread().name, once
// (again after reset_trace(), which is trace::reset() for the bindings).
void name_python_thread_once();
void reset_trace();

namespace detail {
// The tid of the thread that last took the GIL through a guard and still holds it, or 0.
std::atomic<uint32_t>& gil_holder();
void record_gil_wait(uint64_t t0, uint64_t t1, uint32_t holder);
}  // namespace detail

// Runs f() as a binding's C++ interval, in a zone at `loc`, releasing or holding the GIL as
// `policy` and the knob say. f must not touch Python objects.
template <typename F>
auto run_cpp(const trace::SourceLocation* loc, GilPolicy policy, F&& f) {
  name_python_thread_once();
  const uint32_t me = trace::current_thread_tid();
  std::atomic<uint32_t>& holder = detail::gil_holder();
  if (policy == GilPolicy::kWait || release_gil()) {
    uint32_t expected = me;
    holder.compare_exchange_strong(expected, 0, std::memory_order_relaxed);
    PyThreadState* state = PyEval_SaveThread();
    // The zone covers the GIL-free interval only, so a thread that holds the GIL is never
    // "inside" a released call's zone.
    auto result = [&] {
      trace::Zone zone(loc);
      return f();
    }();
    uint32_t seen_holder = holder.load(std::memory_order_relaxed);
    uint64_t t0 = trace::lock_clock();
    PyEval_RestoreThread(state);
    uint64_t t1 = trace::lock_clock();
    holder.store(me, std::memory_order_relaxed);
    detail::record_gil_wait(t0, t1, seen_holder);
    return result;
  }
  trace::Zone zone(loc);
  holder.store(me, std::memory_order_relaxed);
  uint64_t t0 = trace::lock_clock();
  auto result = f();
  trace::record_lock_hold(kGilMutex, t0, trace::lock_clock());
  return result;
}

}  // namespace recur::py

// A static SourceLocation for run_cpp's zone.
#define RECUR_PY_ZONE_LOC(var, name)                                                          \
  static constexpr ::recur::trace::SourceLocation var { name, "python", __func__, __FILE__, uint32_t(__LINE__) }
