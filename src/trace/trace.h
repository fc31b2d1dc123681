// The tracer: every thread's timeline, recorded cheaply, written as Chrome Trace Event JSON.
//
//   RECUR_ZONE("kda_decode");        // a scoped zone with a static name and source location
//   zone.arg("layer", 3);            // typed args attach to the innermost open zone
//   trace::counter("kv_pages", 12);  trace::instant("flush");
//   trace::flow_start(17, "kv_block");  ...  trace::flow_end(17, "kv_block");   // across threads
//   trace::TracedMutex m("kv_pool");    // lock wait / acquired / released, with the holder
//
// Hot path: events go to a per-thread buffer of fixed-size chunks (no locks: one thread writes,
// and a count published with a release store lets a concurrent writer read complete events
// only). An event is a raw rdtsc tick, a pointer and a value; names are static strings.
// Runtime on/off: while off, a site costs one relaxed load and a predictable branch.
// Bounded memory: chunks come from a global budget (set_capacity); when it is spent, events are
// dropped and counted per thread, and the writer reports the count in the trace.
// Thread-safety: recording is per thread; start/stop/write/clear may run from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include "core/status.h"

namespace recur::trace {

struct SourceLocation {
  const char* name;
  const char* function;
  const char* file;
  int line;
};

enum class EventKind : uint8_t {
  kZoneBegin, kZoneEnd, kArgInt, kArgFloat, kArgString, kInstant, kCounter,
  kFlowStart, kFlowStep, kFlowEnd, kLockWait, kLockAcquired, kLockReleased,
};

namespace detail {
extern std::atomic<bool> g_enabled;
void record(EventKind kind, const void* ptr, uint64_t value, uint32_t extra = 0);
}  // namespace detail

inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }

// Starts recording (clears nothing; see clear()).
void start();
void stop();
// Drops every recorded event and resets drop counts. Call while no thread records.
void clear();
// Total chunk memory all threads may use; default 256 MiB. Takes effect for new chunks.
void set_capacity(size_t bytes);
// The calling thread's name in the trace ("rank 1", "kv_transfer"). Static or long-lived string.
void set_thread_name(const char* name);

struct Stats {
  uint64_t events = 0;
  uint64_t dropped = 0;
  size_t threads = 0;
  size_t bytes = 0;
};
Stats stats();

// Chrome Trace Event JSON ({"traceEvents": [...]}), ts in µs with ns fractions.
Result<std::string> chrome_json();
Status write_chrome_json(const std::string& path);

class Zone {
 public:
  explicit Zone(const SourceLocation* loc) : active_(enabled()) {
    if (active_) detail::record(EventKind::kZoneBegin, loc, 0);
  }
  ~Zone() {
    if (active_) detail::record(EventKind::kZoneEnd, nullptr, 0);
  }
  Zone(const Zone&) = delete;
  Zone& operator=(const Zone&) = delete;

  // Keys (and string values) must be static strings.
  void arg(const char* key, int64_t value) {
    if (active_) detail::record(EventKind::kArgInt, key, uint64_t(value));
  }
  void arg(const char* key, int value) { arg(key, int64_t(value)); }
  void arg(const char* key, double value);
  void arg(const char* key, const char* value) {
    if (active_) detail::record(EventKind::kArgString, key, reinterpret_cast<uintptr_t>(value));
  }

 private:
  bool active_;
};

inline void instant(const char* name) {
  if (enabled()) detail::record(EventKind::kInstant, name, 0);
}
void counter(const char* name, double value);
inline void flow_start(uint64_t id, const char* name) {
  if (enabled()) detail::record(EventKind::kFlowStart, name, id);
}
inline void flow_step(uint64_t id, const char* name) {
  if (enabled()) detail::record(EventKind::kFlowStep, name, id);
}
inline void flow_end(uint64_t id, const char* name) {
  if (enabled()) detail::record(EventKind::kFlowEnd, name, id);
}

// A mutex whose waits and holds appear in the trace (it must outlive the trace's writing): "wait <name>" from wait-begin to acquired
// (args: the holder's thread id when the wait began) and "hold <name>" from acquired to released.
class TracedMutex {
 public:
  explicit TracedMutex(const char* name) : name_(name) {}
  void lock();
  void unlock();
  bool try_lock();
  const char* name() const { return name_; }

 private:
  const char* name_;
  std::mutex mutex_;
  std::atomic<uint32_t> holder_{0};
};

}  // namespace recur::trace

#define RECUR_TRACE_CONCAT_INNER_(a, b) a##b
#define RECUR_TRACE_CONCAT_(a, b) RECUR_TRACE_CONCAT_INNER_(a, b)
// Declares `zone` in the current scope.
#define RECUR_ZONE(name_literal)                                                                              \
  static constexpr ::recur::trace::SourceLocation RECUR_TRACE_CONCAT_(recur_zone_loc_, __LINE__){           \
      name_literal, __func__, __FILE__, __LINE__};                                                           \
  ::recur::trace::Zone zone(&RECUR_TRACE_CONCAT_(recur_zone_loc_, __LINE__))
