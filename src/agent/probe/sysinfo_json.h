// JSON for SystemInfo: the `recur sysinfo --json` output and the on-disk roofline cache.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "probe/sysinfo.h"

namespace recur {

// One cached measurement per ISA level ("avx512", "avx2", "scalar").
struct CachedRoofline {
  Roofline roofline;
  std::string measured_at;
  MeasureConditions conditions;  // absent fields in caches written before they were recorded
};
struct SysinfoCache {
  // 2: the scalar FMA peak became SSE2-packed (caches of 1 hold a 4x lower scalar peak).
  // 3: the read peak is the faster of a plain and a prefetching sum-read (caches of 2 may hold
  //    a plain sum-read's lower figure).
  static constexpr int kSchema = 3;
  SystemInfo machine;  // the machine the measurements belong to
  std::map<std::string, CachedRoofline> rooflines;
};

nlohmann::json sysinfo_to_json(const SystemInfo& info);
std::string sysinfo_cache_to_json(const SysinfoCache& cache);
// Errors name the field that is missing or has the wrong type.
Result<SysinfoCache> parse_sysinfo_cache(std::string_view text);

}  // namespace recur
