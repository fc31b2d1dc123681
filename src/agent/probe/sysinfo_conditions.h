// Whether a roofline measurement can be trusted: the machine's load when it was taken and the
// spread of its samples. A roofline measured while other work ran is low (the later bandwidth
// fractions come out above 1: a cache measured under load gave 2.1), so it is recorded with
// its conditions and measured again once the machine is quiet.
//
// The rule (docs/probes.md "The roofline cache"):
//   quiet load       = 0.25 x logical CPUs + 0.5 (the 1-minute load average, /proc/loadavg)
//   disturbed        = the load before measuring was above the quiet load, or a peak's spread
//                      ((max - min) / median) was above kMaxQuietSpread
//   measured again   = when a cached roofline is disturbed and the machine is quiet now: at once
//                      when it was loaded then (and the load fell by at least 1 since), else when
//                      the cached one is older than kRemeasureAfterS (so a machine that is always
//                      noisy is not measured on every call)
// Pure functions except current_load(); thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "probe/sysinfo.h"

namespace recur {

inline constexpr double kMaxQuietSpread = 0.25;
inline constexpr int64_t kRemeasureAfterS = 600;
// A measured fraction of a roof above this is not physics but a roof measured too low.
inline constexpr double kSuspectRooflineFrac = 1.2;

// The 1-minute load average, or nullopt where /proc/loadavg is unreadable.
std::optional<double> current_load();
double quiet_load(int logical_cpus);
// Why the measurement is not to be trusted ("" when it is): "load 3.1 > quiet 1.0", "spread ...".
std::string disturbance(const MeasureConditions& c, const Roofline& r);
// Whether a cached roofline should be measured again now (the rule above).
bool should_remeasure(const MeasureConditions& cached, const Roofline& r, std::optional<double> load_now, int64_t now_unix);

// "" when frac <= kSuspectRooflineFrac; else a note that the fraction is suspect (the roof was
// measured too low, e.g. on a loaded machine) and how to re-measure. `what`: "DRAM bandwidth".
std::string suspect_fraction_note(std::string_view what, double frac);

}  // namespace recur
