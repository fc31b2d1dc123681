#include "trace/external_lock.h"

#include <sys/syscall.h>
#include <unistd.h>

#include "core/knobs.h"
#include "trace/trace.h"

namespace recur {
RECUR_KNOB(python_release_gil,
           {.name = "python.release_gil", .type = KnobType::kBool, .default_value = "true",
            .components = {"lock:gil", "thread:kv_transfer"},
            .acts = KnobActs::kPython,
            .help = "Python bindings: long C++ calls (forward, prefill, decode, generate) release the GIL"});
}  // namespace recur

namespace recur::trace {

uint64_t lock_clock() { return detail::ticks(); }

uint32_t current_thread_tid() {
  static thread_local uint32_t tid = uint32_t(::syscall(SYS_gettid));
  return tid;
}

void record_lock_wait(const char* mutex, uint64_t t0, uint64_t t1, uint32_t holder_tid) {
  if (enabled()) detail::record_lock_event(RawKind::kLockWait, mutex, t0, t1, holder_tid);
}

void record_lock_hold(const char* mutex, uint64_t t0, uint64_t t1) {
  if (enabled()) detail::record_lock_event(RawKind::kLockHold, mutex, t0, t1, 0);
}

}  // namespace recur::trace
