// What this machine is and what it can do: cores, CPU features, caches, and a measured roofline.
//
// The roofline numbers are measured, not looked up: read bandwidth on one and on all threads,
// and peak fp32 FMA, bf16-dot and int8-dot throughput, each from a short probe (< 2 s) repeated
// a few times so the spread is known. They are cached in ~/.cache/recur/sysinfo.json (or
// $RECUR_CACHE_DIR/sysinfo.json); later roofline figures divide by them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace recur {

// One measured peak: the median of `samples`, with their spread.
struct PeakMeasurement {
  double median = 0;
  double min = 0;
  double max = 0;
  int samples = 0;
  int threads = 0;
  std::string unit;    // "GB/s", "GFLOP/s", "GOP/s"
  std::string method;  // how it was measured, in one line
  double elapsed_s = 0;  // wall time of the whole probe, calibration included
  // (max - min) / median
  double spread() const { return median > 0 ? (max - min) / median : 0; }
};

struct CacheLevel {
  int level = 0;           // 1, 2, 3
  std::string type;        // "Data", "Instruction", "Unified"
  uint64_t size_bytes = 0;
  int shared_by_cpus = 0;  // logical CPUs sharing one instance
};

struct Roofline {
  PeakMeasurement read_bw_1t;       // GB/s, one thread
  PeakMeasurement read_bw_all;      // GB/s, every core
  PeakMeasurement fp32_fma_1t;      // GFLOP/s (an FMA counts 2), one thread
  PeakMeasurement fp32_fma_all;     // GFLOP/s, every core
  PeakMeasurement bf16_dot_1t;      // GFLOP/s of bf16 dot products (vdpbf16ps), one thread
  PeakMeasurement int8_dot_1t;      // GOP/s of int8 dot products (vpdpbusd), one thread
};

// The conditions a roofline was measured under (probe/sysinfo_conditions.h judges them).
struct MeasureConditions {
  std::optional<double> load_before;  // 1-minute load average before measuring (absent: unknown)
  std::optional<double> load_after;   // and after (includes the measurement's own threads)
  int logical_cpus = 0;
  int64_t measured_unix = 0;          // 0: unknown
};

struct SystemInfo {
  int logical_cpus = 0;
  int physical_cores = 0;
  std::string cpu_brand;
  std::string features;             // cpu_feature_string()
  std::string isa;                  // active dispatch level
  std::vector<CacheLevel> caches;
  Roofline roofline;
  std::string measured_at;          // ISO-8601 UTC
  MeasureConditions conditions;     // load and time of the measurement
  std::string disturbed;            // why the roofline is not to be trusted ("" when it is)
  std::string cache_path;           // where it was cached
  bool from_cache = false;
};

// Machine facts that need no measurement.
SystemInfo describe_machine();

// Loads the cached roofline, or measures (and caches) it when absent, stale (other CPU), measured
// on a disturbed machine that is quiet now (probe/sysinfo_conditions.h), or when refresh is set.
Result<SystemInfo> load_or_measure_sysinfo(bool refresh);

// The cached peaks only, for probes that divide by them; measures on first use.
Result<Roofline> machine_roofline();

}  // namespace recur
