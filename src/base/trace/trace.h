// recur's tracer: zones, counters, instants, flows and thread names, recorded into per-thread
// buffers and captured into an EventTable that the writers turn into Chrome JSON or Perfetto.
//
//   recur::trace::set_enabled(true);
//   {
//     RECUR_ZONE("kda_decode");            // a scoped zone named kda_decode, variable `zone`
//     zone.arg("layer", 3);                // up to kMaxZoneArgs typed args
//     RECUR_FLOW_BEGIN("kv_block", 17);    // flow: starts inside this zone ...
//   }
//   // ... on another thread:  { RECUR_ZONE("send"); RECUR_FLOW_END("kv_block", 17); }
//   RECUR_COUNTER("kv_blocks_free", 42);
//   recur::trace::EventTable t = recur::trace::capture();
//
// Cost: enabled, a zone is two clock reads, a few stores and one release store; disabled, one
// predictable branch on a global flag per site. Names, categories, arg keys and string arg
// values must be string literals or otherwise outlive the capture (only pointers are stored).
//
// Thread-safety: recording is safe from any thread and lock-free after a thread's first event.
// capture() may run while threads record (it sees every event published before it read that
// thread's chunk). reset() and set_config() require that no thread is recording.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "core/status.h"
#include "trace/event_table.h"
#include "trace/recorder.h"

namespace recur::trace {

struct TraceConfig {
  // Cap per thread; events past it are dropped and counted (reported in the trace).
  uint64_t max_events_per_thread = uint64_t(1) << 20;  // 32 MiB of 32-byte slots
};

// Turns recording on or off at run time. The first enable calibrates the clock (~20 ms).
void set_enabled(bool on);
void set_config(const TraceConfig& config);
TraceConfig config();

// Names the calling thread in the trace (copied).
void set_thread_name(std::string_view name);

// Everything recorded so far, as a finalized EventTable (ts in ns on the steady_clock base).
// Includes per-thread names and dropped-event counts. Does not clear the buffers.
EventTable capture();
// Empties every buffer and forgets drop counts and thread names; up to 128 MiB of chunks are
// kept (already paged in) for the next recording. Precondition: no thread is recording.
void reset();

inline constexpr int kMaxZoneArgs = 5;

// A scoped zone; use RECUR_ZONE.
class Zone {
 public:
  explicit Zone(const SourceLocation* loc) {
    if (enabled()) [[unlikely]] {
      loc_ = loc;
      nargs_ = 0;
      t0_ = detail::ticks();
    } else {
      loc_ = nullptr;
    }
  }
  ~Zone() {
    if (loc_ != nullptr) [[unlikely]] end();
  }
  Zone(const Zone&) = delete;
  Zone& operator=(const Zone&) = delete;

  // Adds a typed arg: integers, floating point, bool, or a static C string. Args past
  // kMaxZoneArgs are ignored.
  template <typename T>
  Zone& arg(const char* key, T value) {
    if (loc_ == nullptr || nargs_ >= kMaxZoneArgs) return *this;
    Slot& s = args_[nargs_++];
    s.key = key;
    using V = std::decay_t<T>;
    if constexpr (std::is_same_v<V, bool>) {
      s.type = RawArgType::kBool;
      s.value = value ? 1 : 0;
    } else if constexpr (std::is_integral_v<V> && std::is_signed_v<V>) {
      s.type = RawArgType::kInt;
      s.value = uint64_t(int64_t(value));
    } else if constexpr (std::is_integral_v<V>) {
      s.type = RawArgType::kUint;
      s.value = uint64_t(value);
    } else if constexpr (std::is_floating_point_v<V>) {
      s.type = RawArgType::kDouble;
      double d = double(value);
      std::memcpy(&s.value, &d, sizeof d);
    } else {
      static_assert(std::is_convertible_v<V, const char*>, "zone args: number, bool or C string");
      s.type = RawArgType::kString;
      s.value = uint64_t(reinterpret_cast<uintptr_t>(static_cast<const char*>(value)));
    }
    return *this;
  }

 private:
  struct Slot {
    const char* key;
    RawArgType type;
    uint64_t value;
  };

  void end() {
    uint64_t t1 = detail::ticks();
    RawEvent* e = detail::reserve(1u + nargs_);
    if (e == nullptr) return;
    e->kind = RawKind::kZone;
    e->nargs = nargs_;
    e->t0 = t0_;
    e->value = t1;
    e->ptr = loc_;
    // g++ 12 cannot see that only the nargs_ filled slots are read (-Wmaybe-uninitialized).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
    for (int k = 0; k < nargs_; ++k) {
      RawEvent& a = e[1 + k];
      a.kind = RawKind::kArg;
      a.arg_type = args_[k].type;
      a.value = args_[k].value;
      a.ptr = args_[k].key;
    }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
    detail::publish();
  }

  const SourceLocation* loc_;
  uint64_t t0_;
  uint8_t nargs_;
  Slot args_[kMaxZoneArgs];
};

namespace detail {
inline void record_point(RawKind kind, const char* name, uint64_t value, uint32_t aux = 0) {
  RawEvent* e = reserve(1);
  if (e == nullptr) return;
  e->kind = kind;
  e->nargs = 0;
  e->aux = aux;
  e->t0 = ticks();
  e->value = value;
  e->ptr = name;
  publish();
}
}  // namespace detail

// A thread-scoped instant event.
inline void instant(const char* name) {
  if (enabled()) [[unlikely]] detail::record_point(RawKind::kInstant, name, 0);
}

// A counter sample (Chrome "C", Perfetto counter track), integer or floating point.
template <typename T>
inline void counter(const char* name, T value) {
  if (!enabled()) [[likely]] return;
  if constexpr (std::is_floating_point_v<T>) {
    double d = double(value);
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    detail::record_point(RawKind::kCounterDouble, name, bits);
  } else {
    detail::record_point(RawKind::kCounterInt, name, uint64_t(int64_t(value)));
  }
}

// Flow points: begin, step and end of flow `id` (ids are global: the same id on several
// threads links their enclosing zones, e.g. "KV block 17 produced" -> "sent" -> "received").
inline void flow_begin(const char* name, uint64_t id) {
  if (enabled()) [[unlikely]] detail::record_point(RawKind::kFlowBegin, name, id);
}
inline void flow_step(const char* name, uint64_t id) {
  if (enabled()) [[unlikely]] detail::record_point(RawKind::kFlowStep, name, id);
}
inline void flow_end(const char* name, uint64_t id) {
  if (enabled()) [[unlikely]] detail::record_point(RawKind::kFlowEnd, name, id);
}

}  // namespace recur::trace

#define RECUR_TRACE_CONCAT_INNER_(a, b) a##b
#define RECUR_TRACE_CONCAT_(a, b) RECUR_TRACE_CONCAT_INNER_(a, b)

// RECUR_ZONE_CAT(var, "name", "category"): a zone in variable `var`.
#define RECUR_ZONE_CAT(var, name, category)                                                  \
  static constexpr ::recur::trace::SourceLocation RECUR_TRACE_CONCAT_(recur_srcloc_,         \
                                                                      __LINE__){             \
      name, category, __func__, __FILE__, uint32_t(__LINE__)};                               \
  ::recur::trace::Zone var(&RECUR_TRACE_CONCAT_(recur_srcloc_, __LINE__))
// RECUR_ZONE_NAMED(var, "name"): a zone in category "recur" held by `var`.
#define RECUR_ZONE_NAMED(var, name) RECUR_ZONE_CAT(var, name, "recur")
// RECUR_ZONE("name"): a zone held by a variable named `zone` (one per scope).
#define RECUR_ZONE(name) RECUR_ZONE_NAMED(zone, name)

#define RECUR_INSTANT(name) ::recur::trace::instant(name)
#define RECUR_COUNTER(name, value) ::recur::trace::counter(name, value)
#define RECUR_FLOW_BEGIN(name, id) ::recur::trace::flow_begin(name, id)
#define RECUR_FLOW_STEP(name, id) ::recur::trace::flow_step(name, id)
#define RECUR_FLOW_END(name, id) ::recur::trace::flow_end(name, id)
