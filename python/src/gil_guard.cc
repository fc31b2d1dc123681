#include "gil_guard.h"

#include <pybind11/pybind11.h>

#include <string>

#include "core/clock.h"

namespace recur::py {
namespace {
std::atomic<bool> g_release_gil{true};
// trace::reset() forgets thread names: threads name themselves again after one.
std::atomic<uint64_t> g_trace_generation{1};
}  // namespace

bool release_gil() { return g_release_gil.load(std::memory_order_relaxed); }
void set_release_gil(bool on) { g_release_gil.store(on, std::memory_order_relaxed); }

void reset_trace() {
  trace::reset();
  g_trace_generation.fetch_add(1, std::memory_order_relaxed);
}

void name_python_thread_once() {
  static thread_local uint64_t named_in = 0;
  uint64_t generation = g_trace_generation.load(std::memory_order_relaxed);
  if (named_in == generation || !trace::enabled()) return;
  named_in = generation;
  namespace pb = pybind11;
  try {
    std::string name = pb::str(pb::module_::import("threading").attr("current_thread")().attr("name"));
    trace::set_thread_name(name);
  } catch (const pb::error_already_set&) {
    trace::set_thread_name("python");  // interpreter shutting down: a plain name will do
  }
}

namespace detail {

std::atomic<uint32_t>& gil_holder() {
  static std::atomic<uint32_t> holder{0};
  return holder;
}

void record_gil_wait(uint64_t t0, uint64_t t1, uint32_t holder) {
  if (!trace::enabled()) return;
  // An uncontended re-acquire takes well under a microsecond; only real waits are events.
  if (recur::ticks_to_ns(t1) - recur::ticks_to_ns(t0) < kGilWaitRecordNs) return;
  trace::record_lock_wait(kGilMutex, t0, t1, holder);
}

}  // namespace detail
}  // namespace recur::py
