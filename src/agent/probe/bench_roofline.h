// Roofline analysis of one measured kernel call: achieved GB/s and GFLOP/s as fractions of the
// peaks `recur sysinfo` measured, memory- or compute-bound, and whether the time is faster than
// physically possible (a variant that skips work).
//
// Bounds. Compute: the measured fp32 FMA peak. Memory: the measured single-thread read
// bandwidth when the working set exceeds the last-level cache; inside the caches, the load/store
// ports: two vector loads and one store per cycle against two FMAs per cycle, i.e. 3 bytes per
// peak FLOP (so 3 x the FMA peak in GB/s). A call is "beyond the roofline" when it is faster
// than the slower of its two bounds by more than `kBeyondMargin`: no correct kernel is.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "probe/sysinfo.h"

namespace recur::probe {

inline constexpr double kBeyondMargin = 1.5;

struct MachinePeaks {
  double dram_gbps = 0;     // measured read bandwidth, one thread
  double gflops = 0;        // measured fp32 FMA peak, one thread
  double cache_gbps = 0;    // in-cache bound (3 bytes per peak FLOP)
  uint64_t llc_bytes = 0;   // last-level cache size (0: unknown, treat everything as DRAM)
  std::vector<CacheLevel> caches;
};

MachinePeaks peaks_from(const Roofline& roofline, const std::vector<CacheLevel>& caches);
// machine_roofline() and describe_machine().caches (measures on first use, then cached).
Result<MachinePeaks> machine_peaks();

struct RooflineReport {
  double seconds = 0;
  double gbps = 0;
  double gflops = 0;
  double bandwidth_frac = 0;  // gbps / dram_gbps (above 1 is possible in cache)
  double compute_frac = 0;    // gflops / peak
  double intensity = 0;       // FLOP per byte
  double ridge = 0;           // FLOP per byte where the DRAM roof meets the compute roof
  bool in_cache = false;      // working set <= LLC
  bool memory_bound = false;  // intensity < ridge
  double bound_s = 0;         // the speed-of-light time: max(bytes / memory roof, flops / peak)
  bool beyond_roofline = false;
  double beyond_factor = 0;   // bound_s / seconds
};

RooflineReport analyze_roofline(double bytes, double flops, double seconds, uint64_t working_set,
                                const MachinePeaks& peaks);

// "memory-bound: 0.31 of DRAM bandwidth (12.2 GB/s), 0.02 of FMA peak; working set 1.0 MiB in L2"
// (with the suspect_notes appended).
std::string roofline_summary(const RooflineReport& r);
// Fractions above kSuspectRooflineFrac (probe/sysinfo_conditions.h) that physics does not
// allow: DRAM bandwidth when the working set does not fit the caches, and the FMA peak.
std::vector<std::string> suspect_notes(const RooflineReport& r);
// "1.0 MiB: fits L2 (1 MiB)" against the caches.
std::string working_set_summary(uint64_t bytes, const std::vector<CacheLevel>& caches);
std::string human_bytes(uint64_t bytes);

}  // namespace recur::probe
