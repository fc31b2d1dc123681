#include "core/clock.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace recur {
namespace {

TEST(Clock, MonotonicAndOnTheSteadyClockTimeBase) {
  const ClockCalibration& c = clock_calibration();
  if (c.source == ClockSource::kTsc) {
    EXPECT_GT(c.ns_per_tick, 0.05);  // slower than 20 GHz
    EXPECT_LT(c.ns_per_tick, 5.0);   // faster than 200 MHz
  }
  int64_t prev = now_ns();
  for (int i = 0; i < 100000; ++i) {
    int64_t t = now_ns();
    ASSERT_GE(t, prev);
    prev = t;
  }
  // Against steady_clock over 50 ms: within 2 ms (scale error plus scheduling).
  int64_t s0 = int64_t(clock_detail::steady_ns());
  int64_t r0 = now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  int64_t s1 = int64_t(clock_detail::steady_ns());
  int64_t r1 = now_ns();
  EXPECT_NEAR(double(r1 - r0), double(s1 - s0), 2e6);
  EXPECT_NEAR(double(r1), double(s1), 2e6) << "time base must be steady_clock's";
}

TEST(Clock, TicksConvertConsistently) {
  uint64_t a = read_ticks();
  uint64_t b = read_ticks();
  EXPECT_LE(ticks_to_ns(a), ticks_to_ns(b));
}

}  // namespace
}  // namespace recur
