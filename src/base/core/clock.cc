#include "core/clock.h"

#include <chrono>
#include <cstdlib>

#include "core/cpu_features.h"

namespace recur {
namespace clock_detail {

uint64_t steady_ns() {
  return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::steady_clock::now().time_since_epoch())
                      .count());
}

}  // namespace clock_detail

namespace {

// A (steady_clock, tsc) pair read as close together as possible: the tsc is taken halfway
// between two steady_clock reads, and the tightest of a few tries wins.
struct Sample {
  int64_t ns;
  uint64_t tsc;
};

Sample paired_sample() {
  Sample best{};
  int64_t best_width = INT64_MAX;
  for (int i = 0; i < 16; ++i) {
    int64_t a = int64_t(clock_detail::steady_ns());
    uint64_t t = __rdtsc();
    int64_t b = int64_t(clock_detail::steady_ns());
    if (b - a < best_width) {
      best_width = b - a;
      best = {a + (b - a) / 2, t};
    }
  }
  return best;
}

ClockCalibration calibrate() {
  ClockCalibration c;
  // RECUR_CLOCK=steady forces the fallback (for tests and for VMs with a drifting TSC).
  const char* env = std::getenv("RECUR_CLOCK");
  bool forced_steady = env != nullptr && std::string_view(env) == "steady";
  if (!cpu_features().invariant_tsc || forced_steady) return c;

  int64_t start = int64_t(clock_detail::steady_ns());
  Sample s0 = paired_sample();
  while (int64_t(clock_detail::steady_ns()) - s0.ns < 20'000'000) {
  }
  Sample s1 = paired_sample();
  if (s1.tsc <= s0.tsc) return c;  // TSC not advancing: keep steady_clock
  c.source = ClockSource::kTsc;
  c.ns_per_tick = double(s1.ns - s0.ns) / double(s1.tsc - s0.tsc);
  c.tick0 = s1.tsc;
  c.ns0 = s1.ns;
  c.calibration_ms = double(int64_t(clock_detail::steady_ns()) - start) / 1e6;
  return c;
}

}  // namespace

const ClockCalibration& clock_calibration() {
  static const ClockCalibration calibration = calibrate();
  return calibration;
}

std::string_view clock_source_name(ClockSource source) {
  return source == ClockSource::kTsc ? "tsc" : "steady_clock";
}

}  // namespace recur
