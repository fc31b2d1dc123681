#include "probe/sysinfo_conditions.h"

#include <algorithm>
#include <fstream>

#include <fmt/format.h>

namespace recur {

std::optional<double> current_load() {
  std::ifstream in("/proc/loadavg");
  double one = 0;
  if (!(in >> one)) return std::nullopt;
  return one;
}

double quiet_load(int logical_cpus) { return 0.25 * std::max(logical_cpus, 1) + 0.5; }

std::string disturbance(const MeasureConditions& c, const Roofline& r) {
  std::string why;
  const double quiet = quiet_load(c.logical_cpus);
  if (c.load_before && *c.load_before > quiet)
    why = fmt::format("load {:.2f} before measuring (quiet is below {:.2f} on {} CPUs)", *c.load_before, quiet,
                      c.logical_cpus);
  const std::pair<const char*, const PeakMeasurement*> peaks[] = {
      {"read_bw_1t", &r.read_bw_1t},   {"read_bw_all", &r.read_bw_all}, {"fp32_fma_1t", &r.fp32_fma_1t},
      {"fp32_fma_all", &r.fp32_fma_all}, {"bf16_dot_1t", &r.bf16_dot_1t}, {"int8_dot_1t", &r.int8_dot_1t}};
  for (const auto& [name, p] : peaks)
    if (p->samples > 0 && p->spread() > kMaxQuietSpread) {
      why += fmt::format("{}{} spread {:.0f}% (over {:.0f}%)", why.empty() ? "" : "; ", name, 100 * p->spread(),
                         100 * kMaxQuietSpread);
      break;
    }
  return why;
}

bool should_remeasure(const MeasureConditions& cached, const Roofline& r, std::optional<double> load_now, int64_t now_unix) {
  if (disturbance(cached, r).empty()) return false;
  const double quiet = quiet_load(cached.logical_cpus);
  if (!load_now || *load_now > quiet) return false;  // it would be no better now
  // Loaded then and clearly quieter now (by a CPU's worth: the 1-minute average moves slowly, so
  // two calls seconds apart never both measure): at once. A noisy spread alone: at most every
  // kRemeasureAfterS.
  if (cached.load_before && *cached.load_before > quiet) return *cached.load_before - *load_now >= 1.0;
  return cached.measured_unix <= 0 || now_unix - cached.measured_unix >= kRemeasureAfterS;
}

std::string suspect_fraction_note(std::string_view what, double frac) {
  if (!(frac > kSuspectRooflineFrac)) return "";
  return fmt::format("SUSPECT ROOFLINE: {:.2f} of the measured {} is above {:.1f}: the roofline was probably measured "
                     "on a loaded machine; `recur sysinfo` says how it was measured, `recur sysinfo --refresh` "
                     "measures it again",
                     frac, what, kSuspectRooflineFrac);
}

}  // namespace recur
