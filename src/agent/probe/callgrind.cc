#include "probe/callgrind.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <valgrind/callgrind.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/spawn.h"
#include "probe/kernel_harness.h"


namespace recur::probe {
namespace {

namespace fs = std::filesystem;

// valgrind runs in this process group and dies with this process (core/spawn.h).
Result<int> spawn_wait(const std::vector<std::string>& argv, const std::string& log_path) {
  const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  const int log_fd = open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  auto child = spawn_child({.argv = argv, .stdout_fd = null_fd, .stderr_fd = log_fd});
  for (int fd : {null_fd, log_fd})
    if (fd >= 0) close(fd);
  if (log_fd < 0) return io_error("callgrind: cannot write its log {}", log_path);
  if (!child) return unsupported("callgrind: {} (install valgrind)", child.error().message());
  return child->wait();
}

std::string tail_of(const std::string& path, size_t max_chars) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > max_chars ? s.substr(s.size() - max_chars) : s;
}

struct Counted {
  CallgrindProfile profile;
  std::string dump_path;
};

Result<Counted> count(const kernels::KernelSpec& spec, const kernels::VariantSpec& v, const kernels::Shape& shape,
                      const CallgrindOptions& o, const fs::path& dir) {
  if (v.isa == Isa::kAvx512)
    return unsupported("callgrind: valgrind cannot execute AVX-512, so variant {} cannot be counted; count avx2 or scalar",
                       v.name);
  // Unique per count: a kept folder collects the dumps of many probes (a run's experiments).
  static std::atomic<int> counted{0};
  const std::string stem = fmt::format("callgrind.{}.{}-{}", v.name, getpid(), counted++);
  const fs::path out = dir / (stem + ".out");
  const std::string log = (dir / (stem + ".log")).string();
  // valgrind would read /proc/self/exe as itself: resolve the link first.
  std::error_code ec;
  fs::path exe = fs::read_symlink(o.self_exe, ec);
  if (ec) exe = o.self_exe;
  std::vector<std::string> argv = {o.valgrind, "--tool=callgrind", "--instr-atstart=no",
                                   "--callgrind-out-file=" + out.string(), exe.string(), "bench", spec.name,
                                   "--variant", v.name, "--shape", shape.to_string(), "--callgrind-child",
                                   "--callgrind-iters", std::to_string(o.iterations)};
  RECUR_ASSIGN_OR_RETURN(int status, spawn_wait(argv, log));
  if (status != 0) return internal_error("callgrind: child exited with {}: {}", status, tail_of(log, 600));
  // The client-request dump is written as <file>.1 (the final dump at exit is <file>).
  fs::path dump = out;
  dump += ".1";
  if (!fs::exists(dump)) return internal_error("callgrind: no dump {} was written: {}", dump.string(), tail_of(log, 600));
  std::ifstream in(dump);
  std::stringstream ss;
  ss << in.rdbuf();
  RECUR_ASSIGN_OR_RETURN(CallgrindProfile p, parse_callgrind(ss.str()));
  return Counted{std::move(p), dump.string()};
}

// The folder of one bench_callgrind: the caller's (kept), or a fresh temporary one removed with
// this object, so nothing accumulates under $TMPDIR.
struct CallgrindDumpDir {
  fs::path path;
  bool kept = false;
  CallgrindDumpDir() = default;
  CallgrindDumpDir(CallgrindDumpDir&& o) noexcept : path(std::move(o.path)), kept(o.kept) { o.path.clear(); }
  CallgrindDumpDir& operator=(CallgrindDumpDir&&) = delete;
  ~CallgrindDumpDir() {
    std::error_code ec;
    if (!kept && !path.empty()) fs::remove_all(path, ec);
  }

  static Result<CallgrindDumpDir> open(const std::string& keep_in) {
    CallgrindDumpDir d;
    std::error_code ec;
    if (!keep_in.empty()) {
      fs::create_directories(keep_in, ec);
      if (ec) return io_error("callgrind: cannot create {}: {}", keep_in, ec.message());
      d.path = keep_in;
      d.kept = true;
      return d;
    }
    std::string tmpl = (fs::temp_directory_path(ec) / "recur-callgrind-XXXXXX").string();
    if (ec || mkdtemp(tmpl.data()) == nullptr)
      return io_error("callgrind: cannot create a temporary folder {}: {}", tmpl, std::strerror(errno));
    d.path = tmpl;
    return d;
  }
};

// "recur::kernels::rmsnorm_avx2(float const*, ...)" -> "kernels::rmsnorm_avx2".
std::string short_function(const std::string& fn) {
  std::string s = fn.substr(0, fn.find('('));
  if (s.rfind("recur::", 0) == 0) s = s.substr(7);
  return s.empty() ? fn : s;
}

}  // namespace

std::vector<Attribution> attribute_regions(const CallgrindProfile& p, const std::vector<kernels::RegionSpec>& regions,
                                           int top_functions, const std::string& prefix) {
  std::vector<Attribution> out;
  if (p.total == 0) return out;
  double used = 0;
  auto share_of = [&](uint64_t cost) { return std::min(1.0, double(cost) / double(p.total)); };
  if (!regions.empty()) {
    auto in_any_region = [&](const std::string& fn) {
      for (const kernels::RegionSpec& r : regions)
        if (fn.find(r.function_substring) != std::string::npos) return true;
      return false;
    };
    for (const kernels::RegionSpec& r : regions) {
      auto in_region = [&](const std::string& fn) { return fn.find(r.function_substring) != std::string::npos; };
      uint64_t cost = 0;
      std::vector<std::string> fns;
      for (const auto& [fn, self] : p.self) {
        if (!in_region(fn)) continue;
        cost += self;
        fns.push_back(fn);
        if (auto it = p.calls.find(fn); it != p.calls.end())
          for (const auto& [callee, c] : it->second)
            if (!in_any_region(callee)) cost += c;  // callees in a region are counted there
      }
      double s = std::min(share_of(cost), std::max(0.0, 1.0 - used));
      used += s;
      out.push_back({prefix + "/" + r.name, s,
                     fmt::format("{} instructions ({:.1f}%) in functions matching '{}'", cost, 100 * s, r.function_substring)});
    }
  } else {
    std::vector<std::pair<uint64_t, std::string>> by_self;
    for (const auto& [fn, self] : p.self) by_self.emplace_back(self, fn);
    std::sort(by_self.rbegin(), by_self.rend());
    for (int i = 0; i < top_functions && i < int(by_self.size()); ++i) {
      double s = std::min(share_of(by_self[size_t(i)].first), std::max(0.0, 1.0 - used));
      used += s;
      out.push_back({prefix + "/" + short_function(by_self[size_t(i)].second), s,
                     fmt::format("{} instructions self ({:.1f}%)", by_self[size_t(i)].first, 100 * s)});
    }
  }
  out.push_back({std::string(kUnattributed), std::max(0.0, 1.0 - used), "instructions in other functions"});
  return out;
}

Result<Feedback> bench_callgrind(const kernels::KernelSpec& spec, const kernels::VariantSpec& variant,
                                 const kernels::VariantSpec* baseline, const kernels::Shape& shape,
                                 const CallgrindOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  if (o.iterations < 1) return invalid_argument("callgrind: --callgrind-iters must be >= 1");
  RECUR_ASSIGN_OR_RETURN(CallgrindDumpDir dumps, CallgrindDumpDir::open(o.dump_dir));
  const fs::path& dir = dumps.path;
  RECUR_ASSIGN_OR_RETURN(Counted cand, count(spec, variant, shape, o, dir));
  Feedback f;
  f.probe = "bench.callgrind";
  f.tier = 0;
  f.subject = fmt::format("kernel:{} variant={}{} shape={}", spec.name, variant.name, baseline ? " vs " + baseline->name : "",
                          shape.to_string());
  const double per_call = double(cand.profile.total) / o.iterations;
  f.add_metric("instructions_per_call", per_call, "instructions");
  f.attribution = attribute_regions(cand.profile, spec.regions, o.top_functions, "kernel:" + spec.name);
  f.attribution_is_decomposition = true;
  if (dumps.kept) f.artifacts["callgrind"] = cand.dump_path;
  f.notes.push_back(fmt::format("{} {} over {} calls under callgrind (instrumented only around the calls; deterministic)",
                                cand.profile.total, cand.profile.events, o.iterations));
  if (baseline) {
    RECUR_ASSIGN_OR_RETURN(Counted base, count(spec, *baseline, shape, o, dir));
    const double base_per_call = double(base.profile.total) / o.iterations;
    const double ratio = base_per_call > 0 ? per_call / base_per_call : 0;
    f.add_metric("baseline_instructions_per_call", base_per_call, "instructions");
    f.add_metric("instruction_ratio", ratio);
    if (dumps.kept) f.artifacts["callgrind_baseline"] = base.dump_path;
    f.hypothesis = fmt::format("{} executes fewer instructions than {}", variant.name, baseline->name);
    f.verdict = ratio < 1 ? Verdict::kConfirmed : Verdict::kRefuted;
  } else {
    f.hypothesis = fmt::format("instruction counts of {} per region", variant.name);
    f.verdict = Verdict::kConfirmed;
  }
  f.cost_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return f;
}

Status run_callgrind_child(const kernels::KernelSpec& spec, const kernels::VariantSpec& variant, const kernels::Shape& shape,
                           int iterations) {
  RECUR_ASSIGN_OR_RETURN(KernelInstance k, KernelInstance::make(spec, shape));
  k.fill_inputs(Distribution::kUniform, 1);
  k.fill_outputs_zero();
  RECUR_RETURN_IF_ERROR(k.run(variant));  // warm-up, not instrumented
  CALLGRIND_START_INSTRUMENTATION;
  CALLGRIND_ZERO_STATS;
  for (int i = 0; i < iterations; ++i) (void)k.run(variant);
  CALLGRIND_DUMP_STATS_AT("recur-kernel-calls");
  CALLGRIND_STOP_INSTRUMENTATION;
  return ok_status();
}

}  // namespace recur::probe
