// The tracer's hot path: per-thread event buffers and the records written into them.
//
// Each thread that records gets a ThreadBuffer on its first event (the only time a lock is
// taken). Events are 32-byte RawEvent slots holding raw clock ticks (rdtsc), a pointer to a
// static SourceLocation or name, and a payload; a zone with args takes 1 + nargs slots. The
// buffer is a list of chunks; writing an event is a bounds check, a few stores and one release
// store of the chunk's count, which is what a concurrent capture() reads (acquire). Memory per
// thread is capped (TraceConfig::max_events_per_thread); past the cap events are counted as
// dropped, never silently lost, and the count is written into the trace.
//
// Thread-safety: the writing functions are called by the owning thread only (that is what
// thread_local guarantees); capture() may run concurrently with writers; reset() must not.
// Use the macros and functions of trace/trace.h rather than this header directly.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <x86intrin.h>

#include "core/clock.h"

namespace recur::trace {

// The static description of a zone site; one per RECUR_ZONE, like Tracy's source location.
struct SourceLocation {
  const char* name;
  const char* category;
  const char* function;
  const char* file;
  uint32_t line;
};

enum class RawKind : uint8_t {
  kZone,           // t0..t1, ptr = SourceLocation*, followed by nargs kArg slots
  kInstant,        // t0, ptr = name, followed by nargs kArg slots
  kCounterInt,     // t0, ptr = name, value = int64
  kCounterDouble,  // t0, ptr = name, value = double bits
  kFlowBegin,      // t0, ptr = name, value = flow id
  kFlowStep,
  kFlowEnd,
  kLockWait,       // t0 wait begin .. t1 acquired, ptr = mutex name, aux = holder tid
  kLockHold,       // t0 acquired .. t1 released, ptr = mutex name
  kArg,            // ptr = key, arg_type, value
};

enum class RawArgType : uint8_t { kInt, kUint, kDouble, kBool, kString };

struct RawEvent {
  RawKind kind;
  uint8_t nargs;
  RawArgType arg_type;
  uint8_t reserved;
  uint32_t aux;
  uint64_t t0;
  uint64_t value;  // end ticks (zones, locks), counter value, flow id or arg value
  const void* ptr;
};
static_assert(sizeof(RawEvent) == 32);

struct Chunk {
  explicit Chunk(uint32_t cap) : capacity(cap), events(new RawEvent[cap]) {}
  std::atomic<uint32_t> count{0};  // published events; release-stored by the owner
  uint32_t capacity;
  std::unique_ptr<RawEvent[]> events;
};

class ThreadBuffer {
 public:
  // Owner-only hot state.
  RawEvent* cur = nullptr;
  RawEvent* end = nullptr;
  Chunk* chunk = nullptr;

  // Shared state (guarded by mu, taken only on the slow path and by capture/reset).
  std::mutex mu;
  std::vector<std::unique_ptr<Chunk>> chunks;
  uint64_t kept = 0;  // slots in chunks, for the cap
  std::string name;
  int64_t tid = 0;
  bool retired = false;
  std::atomic<uint64_t> dropped{0};

  void publish() { chunk->count.store(uint32_t(cur - chunk->events.get()), std::memory_order_release); }
};

namespace detail {

inline std::atomic<bool> g_enabled{false};
inline bool g_use_tsc = true;  // set (before enabling) from clock_calibration()
extern constinit thread_local ThreadBuffer* t_buffer;

// Slots for n contiguous records, or nullptr when the cap is reached (the event is counted).
RawEvent* reserve_slow(uint32_t n);

inline uint64_t ticks() { return g_use_tsc ? __rdtsc() : recur::read_ticks(); }

inline RawEvent* reserve(uint32_t n) {
  ThreadBuffer* tb = t_buffer;
  if (tb == nullptr || tb->end - tb->cur < ptrdiff_t(n)) [[unlikely]] return reserve_slow(n);
  RawEvent* p = tb->cur;
  tb->cur += n;
  return p;
}

inline void publish() { t_buffer->publish(); }

}  // namespace detail

inline bool enabled() { return detail::g_enabled.load(std::memory_order_relaxed); }

}  // namespace recur::trace
