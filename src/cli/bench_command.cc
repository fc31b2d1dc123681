// `recur bench KERNEL --variant X [--vs Y] --shape ...` times a kernel variant (against another);
// `recur bench cmd [--vs-cmd 'B'] -- COMMAND` times whole programs; `--callgrind` counts
// instructions per named region instead of timing. Each prints a Feedback record.
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli/cli.h"
#include "kernels/registry.h"
#include "probe/bench_kernel.h"
#include "probe/callgrind.h"
#include "probe/probe_cli.h"

namespace recur::cli {
namespace {

struct BenchFlags {
  std::string kernel, variant, vs, shape, hypothesis = "faster";
  double budget_s = 8, resolution = 0.01, target_ms = 1;
  uint64_t seed = 1;
  int rotate = 4;
  int callgrind_iters = 3;
  std::string callgrind_dir;
  bool flush_cache = false, json = false, callgrind = false, callgrind_child = false;
  // bench cmd
  std::vector<std::string> command;
  std::string vs_cmd;
};

int usage_error(const Error& e) {
  std::fprintf(stderr, "recur: %s\n", e.to_string().c_str());
  return e.code() == ErrorCode::kUnsupported ? kExitFailure : kExitUsage;
}

probe::BenchOptions bench_options(const BenchFlags& fl) {
  probe::BenchOptions o;
  o.budget_s = fl.budget_s;
  o.resolution = fl.resolution;
  o.seed = fl.seed;
  o.target_sample_s = fl.target_ms * 1e-3;
  return o;
}

int run_bench_kernel(const BenchFlags& fl) {
  if (fl.kernel.empty()) {
    std::fprintf(stderr, "recur: bench: name a kernel (recur kernels lists them) or use `recur bench cmd -- COMMAND`\n");
    return kExitUsage;
  }
  auto hyp = probe::parse_bench_verdict(fl.hypothesis);
  if (!hyp || *hyp == probe::BenchVerdict::kInconclusive) {
    std::fprintf(stderr, "recur: --hypothesis: '%s' is not one of faster, slower, same\n", fl.hypothesis.c_str());
    return kExitUsage;
  }
  auto knob = global_config().get(fmt::format("kernel.{}.variant", fl.kernel));
  auto target = probe::resolve_kernel_target(kernels::KernelRegistry::global(), fl.kernel, fl.variant, fl.vs, fl.shape,
                                             knob ? *knob : "");
  if (!target) return usage_error(target.error());
  if (fl.callgrind_child) {
    auto s = probe::run_callgrind_child(*target->spec, *target->variant, target->shape, fl.callgrind_iters);
    return s ? kExitOk : report_failure(s.error());
  }
  Result<Feedback> f = [&]() -> Result<Feedback> {
    if (fl.callgrind) {
      probe::CallgrindOptions co;
      co.iterations = fl.callgrind_iters;
      co.dump_dir = fl.callgrind_dir;
      return probe::bench_callgrind(*target->spec, *target->variant, target->vs, target->shape, co);
    }
    probe::KernelBenchOptions o;
    o.bench = bench_options(fl);
    o.rotate = fl.rotate;
    o.flush_cache = fl.flush_cache;
    o.hypothesis = *hyp;
    return probe::bench_kernel(*target->spec, *target->variant, target->vs, target->shape, o);
  }();
  if (!f) return usage_error(f.error());
  probe::print_feedback(*f, fl.json);
  return f->verdict == Verdict::kFailed ? kExitFailure : kExitOk;
}

int run_bench_cmd(const BenchFlags& fl) {
  auto hyp = probe::parse_bench_verdict(fl.hypothesis);
  if (!hyp || *hyp == probe::BenchVerdict::kInconclusive) {
    std::fprintf(stderr, "recur: --hypothesis: '%s' is not one of faster, slower, same\n", fl.hypothesis.c_str());
    return kExitUsage;
  }
  probe::CommandBenchOptions o;
  o.bench = bench_options(fl);
  o.hypothesis = *hyp;
  std::vector<std::string> vs = probe::split_words(fl.vs_cmd);
  auto f = probe::bench_command(fl.command, fl.vs_cmd.empty() ? nullptr : &vs, o);
  if (!f) return report_failure(f.error());
  probe::print_feedback(*f, fl.json);
  return f->verdict == Verdict::kFailed ? kExitFailure : kExitOk;
}

void add_common(CLI::App* cmd, BenchFlags& fl) {
  cmd->add_option("--budget-s", fl.budget_s, "Time budget for the measured rounds, seconds")->capture_default_str();
  cmd->add_option("--resolution", fl.resolution, "Ratios within 1 +- this are 'same' once resolved")->capture_default_str();
  cmd->add_option("--seed", fl.seed, "Bootstrap seed")->capture_default_str();
  cmd->add_option("--hypothesis", fl.hypothesis, "What the candidate is expected to be: faster, slower or same")
      ->capture_default_str();
  cmd->add_flag("--json", fl.json, "Print the Feedback record as JSON");
}

void register_bench(CLI::App& app, Invocation& inv) {
  auto fl = std::make_shared<BenchFlags>();
  auto* cmd = app.add_subcommand(
      "bench",
      "Time a kernel variant, alone or --vs another, in interleaved ABBA rounds with in-run A/A noise calibration; "
      "report the median ratio with a bootstrap 95% CI, a Wilcoxon p-value, faster/slower/same/inconclusive, and "
      "roofline fractions. --callgrind counts instructions per region instead. `recur bench cmd -- COMMAND` times "
      "programs. Exit 0 when it ran (whatever the verdict), 1 when the verdict is failed, 2 on bad usage.");
  cmd->add_option("kernel", fl->kernel, "Kernel name (recur kernels lists them)");
  cmd->add_option("--variant", fl->variant, "Candidate variant (default: the kernel.<name>.variant knob, auto = best)");
  cmd->add_option("--vs", fl->vs, "Baseline variant to compare against");
  cmd->add_option("--shape", fl->shape, "Shape, e.g. M64,N4096 (default: the kernel's)");
  cmd->add_option("--rotate", fl->rotate, "Input sets cycled through (defeats per-input caching)")->capture_default_str();
  cmd->add_flag("--flush-cache", fl->flush_cache, "Write a buffer larger than the LLC before every sample");
  cmd->add_option("--target-ms", fl->target_ms, "Duration of one sample after calibration, ms")->capture_default_str();
  cmd->add_flag("--callgrind", fl->callgrind,
                "Deterministic mode: instruction counts per region under valgrind --tool=callgrind (tier 0)");
  cmd->add_option("--callgrind-iters", fl->callgrind_iters, "Calls counted in --callgrind mode")->capture_default_str();
  cmd->add_option("--callgrind-dir", fl->callgrind_dir,
                  "Keep the --callgrind dumps in this folder (named in the record's artifacts); default: removed");
  cmd->add_flag("--callgrind-child", fl->callgrind_child, "(internal) the process valgrind runs")->group("");
  add_common(cmd, *fl);
  auto* sub = cmd->add_subcommand("cmd", "Time whole programs: wall time from spawn to exit, against --vs-cmd or "
                                         "against itself (A/A). Usage: recur bench cmd [--vs-cmd 'B ARGS'] -- COMMAND ARGS");
  sub->add_option("command", fl->command, "The command to time, after --")->required();
  sub->add_option("--vs-cmd", fl->vs_cmd, "Baseline command (split on spaces, no shell)");
  add_common(sub, *fl);
  // The parent's callback also runs when `cmd` was given; the subcommand's action wins.
  cmd->callback([&inv, fl, sub] {
    if (!sub->parsed()) inv.run = [fl] { return run_bench_kernel(*fl); };
  });
  sub->callback([&inv, fl] { inv.run = [fl] { return run_bench_cmd(*fl); }; });
}

}  // namespace

RECUR_CLI_COMMAND(bench, register_bench);

}  // namespace recur::cli
