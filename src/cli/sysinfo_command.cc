// `recur sysinfo`: cores, CPU features, caches and the measured roofline.
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli/cli.h"
#include "probe/sysinfo.h"
#include "probe/sysinfo_json.h"

namespace recur::cli {
namespace {

struct SysinfoFlags {
  bool json = false;
  bool refresh = false;
};

std::string human_bytes(uint64_t b) {
  if (b >= (uint64_t(1) << 20) && b % (uint64_t(1) << 20) == 0) return fmt::format("{} MiB", b >> 20);
  if (b >= 1024) return fmt::format("{} KiB", b >> 10);
  return fmt::format("{} B", b);
}

void print_peak(const char* label, const PeakMeasurement& m) {
  if (m.samples == 0) {
    fmt::print("  {:<22} -  ({})\n", label, m.method);
    return;
  }
  fmt::print("  {:<16} {:>2} thread{} {:>8.1f} {:<8} [{:.1f} .. {:.1f}, spread {:4.1f}%, n={}, {:.2f} s]\n",
             label, m.threads, m.threads == 1 ? " " : "s", m.median, m.unit, m.min, m.max, 100 * m.spread(),
             m.samples, m.elapsed_s);
}

void print_human(const SystemInfo& s) {
  fmt::print("cpu        {}\n", s.cpu_brand);
  fmt::print("cores      {} logical, {} physical\n", s.logical_cpus, s.physical_cores);
  fmt::print("features   {}\n", s.features);
  fmt::print("isa        {} (kernels dispatch here; lower it with --isa or RECUR_ISA)\n", s.isa);
  fmt::print("caches    ");
  for (const CacheLevel& c : s.caches)
    fmt::print(" L{}{} {}{}", c.level, c.type == "Data" ? "d" : c.type == "Instruction" ? "i" : "",
               human_bytes(c.size_bytes), c.shared_by_cpus > 1 ? fmt::format(" (x{} cpus)", c.shared_by_cpus) : "");
  fmt::print("\nroofline   measured {}{}\n", s.measured_at, s.from_cache ? fmt::format(", cached in {}", s.cache_path) : "");
  if (s.conditions.load_before)
    fmt::print("           load {:.2f} before measuring ({} CPUs)\n", *s.conditions.load_before, s.conditions.logical_cpus);
  if (!s.disturbed.empty())
    fmt::print("           DISTURBED: {}: fractions of this roofline may be too high; measured again when the "
               "machine is quiet (or --refresh)\n",
               s.disturbed);
  const Roofline& r = s.roofline;
  print_peak("read bandwidth", r.read_bw_1t);
  print_peak("read bandwidth", r.read_bw_all);
  print_peak("fp32 FMA", r.fp32_fma_1t);
  print_peak("fp32 FMA", r.fp32_fma_all);
  print_peak("bf16 dot", r.bf16_dot_1t);
  print_peak("int8 dot", r.int8_dot_1t);
  fmt::print("method     bandwidth: {}\n           fp32: {}\n           int8: {}\n", r.read_bw_1t.method,
             r.fp32_fma_1t.method, r.int8_dot_1t.method);
}

void register_sysinfo(CLI::App& app, Invocation& inv) {
  auto flags = std::make_shared<SysinfoFlags>();
  auto* cmd = app.add_subcommand(
      "sysinfo",
      "Print cores, CPU features and caches, and this machine's measured roofline (read bandwidth "
      "on 1 and all threads; peak fp32 FMA, bf16-dot and int8-dot throughput). Measurements are "
      "cached in ~/.cache/recur/sysinfo.json (or $RECUR_CACHE_DIR) per ISA level.");
  cmd->add_flag("--json", flags->json, "Print a JSON object");
  cmd->add_flag("--refresh", flags->refresh, "Measure again even if a cached roofline exists");
  cmd->callback([&inv, flags] {
    inv.run = [flags] {
      auto info = load_or_measure_sysinfo(flags->refresh);
      if (!info) return report_failure(info.error());
      if (flags->json) print_json(sysinfo_to_json(*info));
      else print_human(*info);
      return kExitOk;
    };
  });
}

}  // namespace

RECUR_CLI_COMMAND(sysinfo, register_sysinfo);

}  // namespace recur::cli
