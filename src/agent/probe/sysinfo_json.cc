#include "probe/sysinfo_json.h"

namespace recur {
namespace {

using nlohmann::json;

json peak_to_json(const PeakMeasurement& m) {
  return {{"median", m.median}, {"min", m.min},       {"max", m.max},       {"spread", m.spread()},
          {"samples", m.samples}, {"threads", m.threads}, {"unit", m.unit}, {"method", m.method},
          {"elapsed_s", m.elapsed_s}};
}

json roofline_to_json(const Roofline& r) {
  return {{"read_bw_1t", peak_to_json(r.read_bw_1t)},     {"read_bw_all", peak_to_json(r.read_bw_all)},
          {"fp32_fma_1t", peak_to_json(r.fp32_fma_1t)},   {"fp32_fma_all", peak_to_json(r.fp32_fma_all)},
          {"bf16_dot_1t", peak_to_json(r.bf16_dot_1t)},   {"int8_dot_1t", peak_to_json(r.int8_dot_1t)}};
}

json machine_to_json(const SystemInfo& s) {
  json caches = json::array();
  for (const CacheLevel& c : s.caches)
    caches.push_back({{"level", c.level}, {"type", c.type}, {"size_bytes", c.size_bytes},
                      {"shared_by_cpus", c.shared_by_cpus}});
  return {{"logical_cpus", s.logical_cpus}, {"physical_cores", s.physical_cores},
          {"cpu_brand", s.cpu_brand},       {"features", s.features},
          {"caches", caches}};
}

// Reads field `key` of `obj` as T, or names what is wrong with it.
template <typename T>
Result<T> field(const json& obj, const char* key, const std::string& where) {
  auto it = obj.find(key);
  if (it == obj.end()) return parse_error("{}: missing field '{}'", where, key);
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    return parse_error("{}.{}: wrong type ({})", where, key, it->type_name());
  }
}

Result<PeakMeasurement> peak_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) return parse_error("{}: expected an object", where);
  PeakMeasurement m;
  RECUR_ASSIGN_OR_RETURN(m.median, field<double>(j, "median", where));
  RECUR_ASSIGN_OR_RETURN(m.min, field<double>(j, "min", where));
  RECUR_ASSIGN_OR_RETURN(m.max, field<double>(j, "max", where));
  RECUR_ASSIGN_OR_RETURN(m.samples, field<int>(j, "samples", where));
  RECUR_ASSIGN_OR_RETURN(m.threads, field<int>(j, "threads", where));
  RECUR_ASSIGN_OR_RETURN(m.unit, field<std::string>(j, "unit", where));
  RECUR_ASSIGN_OR_RETURN(m.method, field<std::string>(j, "method", where));
  RECUR_ASSIGN_OR_RETURN(m.elapsed_s, field<double>(j, "elapsed_s", where));
  return m;
}

Result<Roofline> roofline_from_json(const json& j, const std::string& where) {
  if (!j.is_object()) return parse_error("{}: expected an object", where);
  Roofline r;
  struct Slot {
    const char* key;
    PeakMeasurement* out;
  } slots[] = {{"read_bw_1t", &r.read_bw_1t},   {"read_bw_all", &r.read_bw_all},
               {"fp32_fma_1t", &r.fp32_fma_1t}, {"fp32_fma_all", &r.fp32_fma_all},
               {"bf16_dot_1t", &r.bf16_dot_1t}, {"int8_dot_1t", &r.int8_dot_1t}};
  for (const Slot& s : slots) {
    auto it = j.find(s.key);
    if (it == j.end()) return parse_error("{}: missing field '{}'", where, s.key);
    RECUR_ASSIGN_OR_RETURN(*s.out, peak_from_json(*it, where + "." + s.key));
  }
  return r;
}

json conditions_to_json(const MeasureConditions& c) {
  json j = {{"logical_cpus", c.logical_cpus}, {"measured_unix", c.measured_unix}};
  j["load_before"] = c.load_before ? json(*c.load_before) : json(nullptr);
  j["load_after"] = c.load_after ? json(*c.load_after) : json(nullptr);
  return j;
}

// Optional in the cache (older files lack it): absent or null fields stay unknown.
MeasureConditions conditions_from_json(const json& j, int logical_cpus) {
  MeasureConditions c;
  c.logical_cpus = logical_cpus;
  if (!j.is_object()) return c;
  auto number = [&j](const char* key) -> std::optional<double> {
    auto it = j.find(key);
    return it != j.end() && it->is_number() ? std::optional<double>(it->get<double>()) : std::nullopt;
  };
  c.load_before = number("load_before");
  c.load_after = number("load_after");
  if (auto t = number("measured_unix")) c.measured_unix = int64_t(*t);
  return c;
}

}  // namespace

json sysinfo_to_json(const SystemInfo& info) {
  json j = machine_to_json(info);
  j["isa"] = info.isa;
  j["roofline"] = roofline_to_json(info.roofline);
  j["measured_at"] = info.measured_at;
  j["conditions"] = conditions_to_json(info.conditions);
  j["disturbed"] = info.disturbed.empty() ? json(nullptr) : json(info.disturbed);
  j["from_cache"] = info.from_cache;
  j["cache_path"] = info.cache_path;
  return j;
}

std::string sysinfo_cache_to_json(const SysinfoCache& cache) {
  json rooflines = json::object();
  for (const auto& [isa, c] : cache.rooflines)
    rooflines[isa] = {{"measured_at", c.measured_at},
                      {"conditions", conditions_to_json(c.conditions)},
                      {"roofline", roofline_to_json(c.roofline)}};
  json j = {{"schema", SysinfoCache::kSchema}, {"machine", machine_to_json(cache.machine)},
            {"rooflines", rooflines}};
  return j.dump(2) + "\n";
}

Result<SysinfoCache> parse_sysinfo_cache(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return parse_error("sysinfo cache: not valid JSON");
  if (!j.is_object()) return parse_error("sysinfo cache: expected a JSON object at the top level");
  RECUR_ASSIGN_OR_RETURN(int schema, field<int>(j, "schema", "sysinfo cache"));
  if (schema != SysinfoCache::kSchema)
    return parse_error("sysinfo cache: schema {} (this recur reads {})", schema, SysinfoCache::kSchema);
  SysinfoCache cache;
  RECUR_ASSIGN_OR_RETURN(json machine, field<json>(j, "machine", "sysinfo cache"));
  RECUR_ASSIGN_OR_RETURN(cache.machine.cpu_brand, field<std::string>(machine, "cpu_brand", "machine"));
  RECUR_ASSIGN_OR_RETURN(cache.machine.features, field<std::string>(machine, "features", "machine"));
  RECUR_ASSIGN_OR_RETURN(cache.machine.logical_cpus, field<int>(machine, "logical_cpus", "machine"));
  RECUR_ASSIGN_OR_RETURN(json rooflines, field<json>(j, "rooflines", "sysinfo cache"));
  if (!rooflines.is_object()) return parse_error("sysinfo cache: 'rooflines' must be an object");
  for (auto it = rooflines.begin(); it != rooflines.end(); ++it) {
    std::string where = "rooflines." + it.key();
    CachedRoofline c;
    RECUR_ASSIGN_OR_RETURN(c.measured_at, field<std::string>(it.value(), "measured_at", where));
    auto r = it.value().find("roofline");
    if (r == it.value().end()) return parse_error("{}: missing field 'roofline'", where);
    RECUR_ASSIGN_OR_RETURN(c.roofline, roofline_from_json(*r, where + ".roofline"));
    c.conditions = conditions_from_json(it.value().value("conditions", json()), cache.machine.logical_cpus);
    cache.rooflines[it.key()] = std::move(c);
  }
  return cache;
}

}  // namespace recur
