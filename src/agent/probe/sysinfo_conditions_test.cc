#include "probe/sysinfo_conditions.h"

#include <gtest/gtest.h>

#include "probe/bench_roofline.h"
#include "probe/sysinfo_json.h"

namespace recur {
namespace {

PeakMeasurement peak(double median, double min, double max) {
  PeakMeasurement p;
  p.median = median;
  p.min = min;
  p.max = max;
  p.samples = 5;
  p.threads = 1;
  p.unit = "GB/s";
  p.method = "test";
  return p;
}

Roofline steady() {
  Roofline r;
  for (PeakMeasurement* p : {&r.read_bw_1t, &r.read_bw_all, &r.fp32_fma_1t, &r.fp32_fma_all, &r.bf16_dot_1t, &r.int8_dot_1t})
    *p = peak(10, 9.8, 10.2);
  return r;
}

MeasureConditions conditions(std::optional<double> load, int64_t at) {
  return {.load_before = load, .load_after = load, .logical_cpus = 4, .measured_unix = at};
}

TEST(SysinfoConditions, AQuietSteadyMeasurementIsTrusted) {
  EXPECT_DOUBLE_EQ(quiet_load(4), 1.5);
  EXPECT_EQ(disturbance(conditions(0.3, 1000), steady()), "");
  EXPECT_FALSE(should_remeasure(conditions(0.3, 1000), steady(), 0.1, 1000 + 86400));
  // Caches written before conditions were recorded: judged by their spread only.
  EXPECT_FALSE(should_remeasure(conditions(std::nullopt, 0), steady(), 0.1, 1000));
}

TEST(SysinfoConditions, LoadDuringTheMeasurementIsRemeasuredOnceQuiet) {
  const MeasureConditions loaded = conditions(6.0, 1000);
  EXPECT_NE(disturbance(loaded, steady()).find("load 6.00"), std::string::npos) << disturbance(loaded, steady());
  EXPECT_TRUE(should_remeasure(loaded, steady(), 0.4, 1001)) << "quiet now: measure again at once";
  EXPECT_FALSE(should_remeasure(loaded, steady(), 5.0, 1001)) << "still loaded: a new measurement would be no better";
  EXPECT_FALSE(should_remeasure(loaded, steady(), std::nullopt, 1001)) << "load unknown now";
  // Just above quiet then, just below now: the 1-minute average barely moved; no flapping.
  EXPECT_FALSE(should_remeasure(conditions(1.6, 1000), steady(), 1.4, 1003));
}

TEST(SysinfoConditions, ANoisySpreadIsRemeasuredAtMostEveryTenMinutes) {
  Roofline noisy = steady();
  noisy.read_bw_all = peak(10, 5, 12);  // 70% spread
  const MeasureConditions quiet = conditions(0.2, 1000);
  EXPECT_NE(disturbance(quiet, noisy).find("read_bw_all spread 70%"), std::string::npos) << disturbance(quiet, noisy);
  EXPECT_FALSE(should_remeasure(quiet, noisy, 0.2, 1000 + kRemeasureAfterS - 1));
  EXPECT_TRUE(should_remeasure(quiet, noisy, 0.2, 1000 + kRemeasureAfterS));
}

TEST(SysinfoConditions, TheCacheKeepsTheConditions) {
  SysinfoCache cache;
  cache.machine.cpu_brand = "cpu";
  cache.machine.features = "f";
  cache.machine.logical_cpus = 4;
  cache.rooflines["avx2"] = {steady(), "2026-01-01T00:00:00Z", conditions(2.5, 1234)};
  auto back = parse_sysinfo_cache(sysinfo_cache_to_json(cache));
  ASSERT_TRUE(back) << back.error().message();
  const MeasureConditions& c = back->rooflines["avx2"].conditions;
  EXPECT_EQ(c.load_before, 2.5);
  EXPECT_EQ(c.measured_unix, 1234);
  EXPECT_EQ(c.logical_cpus, 4);
}

TEST(SysinfoConditions, FractionsAboveTheRoofAreFlaggedSuspect) {
  EXPECT_EQ(suspect_fraction_note("read bandwidth", 1.1), "");
  EXPECT_NE(suspect_fraction_note("read bandwidth", 2.1).find("SUSPECT ROOFLINE: 2.10 of the measured read bandwidth"),
            std::string::npos);
  probe::RooflineReport out_of_cache;
  out_of_cache.bandwidth_frac = 2.1;
  out_of_cache.in_cache = false;
  EXPECT_EQ(probe::suspect_notes(out_of_cache).size(), 1u);
  EXPECT_NE(probe::roofline_summary(out_of_cache).find("SUSPECT ROOFLINE"), std::string::npos);
  probe::RooflineReport in_cache = out_of_cache;
  in_cache.in_cache = true;  // more than DRAM bandwidth is real in cache
  EXPECT_TRUE(probe::suspect_notes(in_cache).empty());
  in_cache.compute_frac = 1.5;
  EXPECT_EQ(probe::suspect_notes(in_cache).size(), 1u);
}

}  // namespace
}  // namespace recur
