// A monotonic high-resolution clock.
//
// Where the CPU has an invariant TSC, time is rdtsc scaled by a factor calibrated once against
// std::chrono::steady_clock (about 20 ms, on first use); elsewhere it is steady_clock itself.
// Hot paths (the tracer) store raw ticks with read_ticks() and convert later with
// ticks_to_ns(), which keeps the per-event cost to one rdtsc. Thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include <x86intrin.h>

namespace recur {

enum class ClockSource { kTsc, kSteadyClock };

struct ClockCalibration {
  ClockSource source = ClockSource::kSteadyClock;
  double ns_per_tick = 1.0;  // 1.0 for steady_clock, whose ticks are nanoseconds
  uint64_t tick0 = 0;        // ticks at calibration ...
  int64_t ns0 = 0;           // ... and the steady_clock time (ns) at the same instant
  double calibration_ms = 0; // how long calibration took
};

// Calibrates on first call.
const ClockCalibration& clock_calibration();
std::string_view clock_source_name(ClockSource source);

// Raw ticks of the active source: rdtsc, or steady_clock nanoseconds.
inline uint64_t read_ticks();
// Ticks to nanoseconds on the steady_clock time base.
inline int64_t ticks_to_ns(uint64_t ticks);
// Nanoseconds on the steady_clock time base.
inline int64_t now_ns() { return ticks_to_ns(read_ticks()); }

namespace clock_detail {
uint64_t steady_ns();
}  // namespace clock_detail

// The calibration lookup is a static-local guard check: one predictable branch.
inline uint64_t read_ticks() {
  return clock_calibration().source == ClockSource::kTsc ? __rdtsc() : clock_detail::steady_ns();
}

inline int64_t ticks_to_ns(uint64_t ticks) {
  const ClockCalibration& c = clock_calibration();
  if (c.source == ClockSource::kSteadyClock) return int64_t(ticks);
  return c.ns0 + int64_t(double(int64_t(ticks - c.tick0)) * c.ns_per_tick);
}

}  // namespace recur
