#include "probe/sysinfo.h"

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "core/cpu_features.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "probe/roofline_measure.h"
#include "probe/sysinfo_conditions.h"
#include "probe/sysinfo_json.h"

namespace recur {
namespace fs = std::filesystem;
namespace {

std::string read_first_line(const fs::path& p) {
  std::ifstream in(p);
  std::string line;
  std::getline(in, line);
  return line;
}

// "32K", "1024K", "32M" as sysfs prints cache sizes.
uint64_t parse_size(const std::string& s) {
  if (s.empty()) return 0;
  char* end = nullptr;
  uint64_t v = std::strtoull(s.c_str(), &end, 10);
  if (end && (*end == 'K' || *end == 'k')) v <<= 10;
  else if (end && (*end == 'M' || *end == 'm')) v <<= 20;
  else if (end && (*end == 'G' || *end == 'g')) v <<= 30;
  return v;
}

// "0-1,4" -> 3
int count_cpu_list(const std::string& s) {
  int n = 0;
  std::stringstream ss(s);
  std::string part;
  while (std::getline(ss, part, ',')) {
    auto dash = part.find('-');
    if (dash == std::string::npos) n += part.empty() ? 0 : 1;
    else n += std::atoi(part.c_str() + dash + 1) - std::atoi(part.c_str()) + 1;
  }
  return n;
}

// Where sysfs has no cache directory (some VMs), glibc's sysconf answers from cpuid.
std::vector<CacheLevel> caches_from_sysconf() {
  std::vector<CacheLevel> out;
  struct Item {
    int level;
    const char* type;
    int name;
  } items[] = {{1, "Data", _SC_LEVEL1_DCACHE_SIZE}, {1, "Instruction", _SC_LEVEL1_ICACHE_SIZE},
               {2, "Unified", _SC_LEVEL2_CACHE_SIZE}, {3, "Unified", _SC_LEVEL3_CACHE_SIZE}};
  for (const Item& it : items) {
    long size = sysconf(it.name);
    if (size > 0) out.push_back({it.level, it.type, uint64_t(size), 0});
  }
  return out;
}

std::vector<CacheLevel> read_caches() {
  std::vector<CacheLevel> out;
  const fs::path base = "/sys/devices/system/cpu/cpu0/cache";
  std::error_code ec;
  for (int i = 0; i < 16; ++i) {
    fs::path dir = base / ("index" + std::to_string(i));
    if (!fs::exists(dir, ec)) break;
    CacheLevel c;
    c.level = std::atoi(read_first_line(dir / "level").c_str());
    c.type = read_first_line(dir / "type");
    c.size_bytes = parse_size(read_first_line(dir / "size"));
    c.shared_by_cpus = count_cpu_list(read_first_line(dir / "shared_cpu_list"));
    out.push_back(c);
  }
  return out.empty() ? caches_from_sysconf() : out;
}

int count_physical_cores() {
  std::set<std::pair<std::string, std::string>> cores;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/sys/devices/system/cpu", ec)) {
    std::string name = entry.path().filename().string();
    if (name.rfind("cpu", 0) != 0 || name.size() < 4 || !std::isdigit(static_cast<unsigned char>(name[3])))
      continue;
    std::string pkg = read_first_line(entry.path() / "topology/physical_package_id");
    std::string core = read_first_line(entry.path() / "topology/core_id");
    if (!core.empty()) cores.emplace(pkg, core);
  }
  return cores.empty() ? int(sysconf(_SC_NPROCESSORS_ONLN)) : int(cores.size());
}

std::string utc_now_iso() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

fs::path cache_file() {
  if (const char* dir = std::getenv("RECUR_CACHE_DIR"); dir && *dir) return fs::path(dir) / "sysinfo.json";
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return fs::path(xdg) / "recur/sysinfo.json";
  if (const char* home = std::getenv("HOME"); home && *home) return fs::path(home) / ".cache/recur/sysinfo.json";
  return fs::temp_directory_path() / "recur/sysinfo.json";
}

// The cache holds one roofline per ISA level, for the machine described in it.
bool same_machine(const SystemInfo& a, const SystemInfo& b) {
  return a.cpu_brand == b.cpu_brand && a.logical_cpus == b.logical_cpus && a.features == b.features;
}

Status write_atomically(const fs::path& path, const std::string& text) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  if (ec) return io_error("{}: cannot create directory: {}", path.parent_path().string(), ec.message());
  fs::path tmp = path;
  tmp += ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return io_error("{}: cannot open for writing", tmp.string());
    out << text;
    if (!out.flush()) return io_error("{}: write failed", tmp.string());
  }
  fs::rename(tmp, path, ec);
  if (ec) return io_error("{}: rename failed: {}", path.string(), ec.message());
  return ok_status();
}

}  // namespace

SystemInfo describe_machine() {
  SystemInfo s;
  const CpuFeatures& f = cpu_features();
  s.logical_cpus = int(allowed_cpus().size());
  s.physical_cores = count_physical_cores();
  s.cpu_brand = f.brand;
  s.features = cpu_feature_string(f);
  s.isa = std::string(isa_name(active_isa()));
  s.caches = read_caches();
  s.cache_path = cache_file().string();
  return s;
}

Result<SystemInfo> load_or_measure_sysinfo(bool refresh) {
  SystemInfo now = describe_machine();
  const fs::path path = cache_file();
  SysinfoCache cache;
  std::error_code ec;
  if (fs::exists(path, ec)) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = parse_sysinfo_cache(text.str());
    if (!parsed) {
      LOG_WARN("{}: ignoring unreadable cache ({}); measuring again", path.string(), parsed.error().message());
    } else if (!same_machine(parsed->machine, now)) {
      LOG_INFO("{}: cached for another CPU ({}); measuring again", path.string(), parsed->machine.cpu_brand);
    } else {
      cache = std::move(*parsed);
    }
  }
  auto hit = cache.rooflines.find(now.isa);
  const int64_t now_unix = int64_t(std::time(nullptr));
  if (!refresh && hit != cache.rooflines.end()) {
    const CachedRoofline& c = hit->second;
    if (!should_remeasure(c.conditions, c.roofline, current_load(), now_unix)) {
      now.roofline = c.roofline;
      now.measured_at = c.measured_at;
      now.conditions = c.conditions;
      now.disturbed = disturbance(c.conditions, c.roofline);
      now.from_cache = true;
      return now;
    }
    LOG_INFO("{}: the cached roofline was measured on a disturbed machine ({}); the machine is quiet now, measuring again",
             path.string(), disturbance(c.conditions, c.roofline));
  }

  LOG_INFO("measuring this machine's roofline at isa {} (a few seconds)...", now.isa);
  RECUR_ASSIGN_OR_RETURN(auto pool, ThreadPool::create({.threads = 0, .pin = true}));
  now.conditions.logical_cpus = now.logical_cpus;
  now.conditions.load_before = current_load();
  now.roofline = measure_roofline(*pool, now.caches);
  now.conditions.load_after = current_load();
  now.conditions.measured_unix = now_unix;
  now.measured_at = utc_now_iso();
  now.disturbed = disturbance(now.conditions, now.roofline);
  if (!now.disturbed.empty())
    LOG_WARN("the roofline was measured on a disturbed machine ({}); fractions of it may come out above 1; it is "
             "measured again once the machine is quiet (or: recur sysinfo --refresh)",
             now.disturbed);
  cache.machine = now;
  cache.rooflines[now.isa] = {now.roofline, now.measured_at, now.conditions};
  if (auto s = write_atomically(path, sysinfo_cache_to_json(cache)); !s)
    LOG_WARN("could not cache the roofline: {}", s.error().message());
  return now;
}

Result<Roofline> machine_roofline() {
  RECUR_ASSIGN_OR_RETURN(SystemInfo info, load_or_measure_sysinfo(false));
  return info.roofline;
}

}  // namespace recur
