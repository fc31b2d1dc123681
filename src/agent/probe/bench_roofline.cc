#include "probe/bench_roofline.h"

#include <algorithm>

#include <fmt/format.h>

#include "probe/sysinfo_conditions.h"

namespace recur::probe {

MachinePeaks peaks_from(const Roofline& roofline, const std::vector<CacheLevel>& caches) {
  MachinePeaks p;
  p.dram_gbps = roofline.read_bw_1t.median;
  p.gflops = roofline.fp32_fma_1t.median;
  p.cache_gbps = 3.0 * p.gflops;
  for (const CacheLevel& c : caches)
    if (c.type != "Instruction") p.llc_bytes = std::max(p.llc_bytes, c.size_bytes);
  p.caches = caches;
  return p;
}

Result<MachinePeaks> machine_peaks() {
  RECUR_ASSIGN_OR_RETURN(Roofline r, machine_roofline());
  return peaks_from(r, describe_machine().caches);
}

RooflineReport analyze_roofline(double bytes, double flops, double seconds, uint64_t working_set,
                                const MachinePeaks& peaks) {
  RooflineReport r;
  r.seconds = seconds;
  if (seconds > 0) {
    r.gbps = bytes / seconds / 1e9;
    r.gflops = flops / seconds / 1e9;
  }
  r.bandwidth_frac = peaks.dram_gbps > 0 ? r.gbps / peaks.dram_gbps : 0;
  r.compute_frac = peaks.gflops > 0 ? r.gflops / peaks.gflops : 0;
  r.intensity = bytes > 0 ? flops / bytes : 0;
  r.in_cache = peaks.llc_bytes > 0 && working_set <= peaks.llc_bytes;
  // The label uses the measured DRAM roof (the peaks sysinfo measured); the speed-of-light bound
  // uses the in-cache roof when the working set fits, so the flag never fires on cached data.
  r.ridge = peaks.dram_gbps > 0 ? peaks.gflops / peaks.dram_gbps : 0;
  r.memory_bound = r.intensity < r.ridge;
  const double mem_roof = r.in_cache ? peaks.cache_gbps : peaks.dram_gbps;
  const double t_mem = mem_roof > 0 ? bytes / (mem_roof * 1e9) : 0;
  const double t_flop = peaks.gflops > 0 ? flops / (peaks.gflops * 1e9) : 0;
  r.bound_s = std::max(t_mem, t_flop);
  if (seconds > 0 && r.bound_s > 0) {
    r.beyond_factor = r.bound_s / seconds;
    r.beyond_roofline = r.beyond_factor > kBeyondMargin;
  }
  return r;
}

std::string human_bytes(uint64_t b) {
  if (b >= (uint64_t(1) << 30)) return fmt::format("{:.1f} GiB", double(b) / double(uint64_t(1) << 30));
  if (b >= (uint64_t(1) << 20)) return fmt::format("{:.1f} MiB", double(b) / double(uint64_t(1) << 20));
  if (b >= 1024) return fmt::format("{:.1f} KiB", double(b) / 1024.0);
  return fmt::format("{} B", b);
}

std::string working_set_summary(uint64_t bytes, const std::vector<CacheLevel>& caches) {
  std::vector<CacheLevel> data;
  for (const CacheLevel& c : caches)
    if (c.type != "Instruction") data.push_back(c);
  std::sort(data.begin(), data.end(), [](const CacheLevel& a, const CacheLevel& b) { return a.level < b.level; });
  if (data.empty()) return fmt::format("{} (cache sizes unknown)", human_bytes(bytes));
  for (const CacheLevel& c : data)
    if (bytes <= c.size_bytes) return fmt::format("{}: fits L{} ({})", human_bytes(bytes), c.level, human_bytes(c.size_bytes));
  return fmt::format("{}: exceeds L{} ({}), streams from DRAM", human_bytes(bytes), data.back().level,
                     human_bytes(data.back().size_bytes));
}

std::vector<std::string> suspect_notes(const RooflineReport& r) {
  std::vector<std::string> out;
  // In cache, more than DRAM bandwidth is real; out of cache it is not.
  if (!r.in_cache)
    if (std::string n = suspect_fraction_note("DRAM bandwidth", r.bandwidth_frac); !n.empty()) out.push_back(n);
  if (std::string n = suspect_fraction_note("fp32 FMA peak", r.compute_frac); !n.empty()) out.push_back(n);
  return out;
}

std::string roofline_summary(const RooflineReport& r) {
  std::string s = fmt::format("{}: {:.2f} of measured DRAM bandwidth ({:.1f} GB/s), {:.2f} of fp32 FMA peak ({:.1f} GFLOP/s); "
                              "intensity {:.3g} FLOP/B vs ridge {:.3g}{}",
                              r.memory_bound ? "memory-bound" : "compute-bound", r.bandwidth_frac, r.gbps, r.compute_frac,
                              r.gflops, r.intensity, r.ridge,
                              r.in_cache ? " (working set fits in cache: more than DRAM bandwidth is possible)" : "");
  for (const std::string& n : suspect_notes(r)) s += "; " + n;
  if (r.beyond_roofline)
    s += fmt::format("; BEYOND THE ROOFLINE: {:.1f}x faster than the speed of light ({:.3g} s): work is being skipped",
                     r.beyond_factor, r.bound_s);
  return s;
}

}  // namespace recur::probe
