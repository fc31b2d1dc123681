// `recur check KERNEL --variant X [--vs Y] [--partitions 1,2,4,8]`: is this variant's output the
// same? Calls probe::check_variant and prints its Feedback record.
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli/cli.h"
#include "kernels/registry.h"
#include "probe/check.h"
#include "probe/probe_cli.h"

namespace recur::cli {
namespace {

struct CheckFlags {
  std::string kernel, variant, vs, shape, partitions, seeds = "1,2,3", distributions;
  double rtol = -1, atol = -1;
  bool json = false;
};

int run_check(const CheckFlags& fl) {
  const auto& registry = kernels::KernelRegistry::global();
  auto knob = global_config().get(fmt::format("kernel.{}.variant", fl.kernel));
  auto target = probe::resolve_kernel_target(registry, fl.kernel, fl.variant, fl.vs, fl.shape, knob ? *knob : "");
  if (!target) {
    std::fprintf(stderr, "recur: %s\n", target.error().to_string().c_str());
    return target.error().code() == ErrorCode::kUnsupported ? kExitFailure : kExitUsage;
  }
  probe::CheckOptions o;
  o.vs = target->vs;
  auto seeds = probe::parse_int_list(fl.seeds, "--seeds");
  if (!seeds) return report_failure(seeds.error());
  o.seeds.assign(seeds->begin(), seeds->end());
  if (!fl.partitions.empty()) {
    auto parts = probe::parse_int_list(fl.partitions, "--partitions");
    if (!parts) return report_failure(parts.error());
    o.partitions.assign(parts->begin(), parts->end());
  }
  if (!fl.distributions.empty()) {
    o.distributions.clear();
    std::string list = fl.distributions;
    for (char& c : list)
      if (c == ',') c = ' ';
    for (const std::string& name : probe::split_words(list)) {
      auto d = probe::parse_distribution(name);
      if (!d) {
        std::fprintf(stderr, "recur: --distributions: unknown '%s'; expected uniform, normal, wide_range, cancellation\n",
                     name.c_str());
        return kExitUsage;
      }
      o.distributions.push_back(*d);
    }
  }
  if (fl.rtol >= 0 || fl.atol >= 0)
    o.tolerance = kernels::Tolerance{.atol = std::max(fl.atol, 0.0), .rtol = std::max(fl.rtol, 0.0)};
  auto report = probe::check_variant(*target->spec, *target->variant, target->shape, o);
  if (!report) return report_failure(report.error());
  Feedback f = probe::check_feedback(*report, o);
  probe::print_feedback(f, fl.json);
  return f.verdict == Verdict::kConfirmed ? kExitOk : kExitFailure;
}

void register_check(CLI::App& app, Invocation& inv) {
  auto fl = std::make_shared<CheckFlags>();
  auto* cmd = app.add_subcommand(
      "check",
      "Check a kernel variant against its float64 reference (and --vs another variant, and itself split into "
      "--partitions shards) over several seeds and input distributions, with sentinel, input-checksum, fresh-input, "
      "ghost-replay and roofline defences. Exit 0 when confirmed, 1 when refuted or failed, 2 on bad usage.");
  cmd->add_option("kernel", fl->kernel, "Kernel name (recur kernels lists them)")->required();
  cmd->add_option("--variant", fl->variant, "Variant to check (default: the kernel.<name>.variant knob, auto = best)");
  cmd->add_option("--vs", fl->vs, "Also compare against this variant");
  cmd->add_option("--shape", fl->shape, "Shape, e.g. M64,N4096 (default: the kernel's)");
  cmd->add_option("--partitions", fl->partitions, "Shard counts to compare with the unpartitioned result, e.g. 1,2,4,8");
  cmd->add_option("--seeds", fl->seeds, "Input seeds, e.g. 1,2,3")->capture_default_str();
  cmd->add_option("--distributions", fl->distributions,
                  "Input distributions (default all): uniform,normal,wide_range,cancellation");
  cmd->add_option("--rtol", fl->rtol, "Override the relative tolerance (times the element's magnitude)");
  cmd->add_option("--atol", fl->atol, "Override the absolute tolerance");
  cmd->add_flag("--json", fl->json, "Print the Feedback record as JSON");
  cmd->callback([&inv, fl] { inv.run = [fl] { return run_check(*fl); }; });
}

}  // namespace

RECUR_CLI_COMMAND(check, register_check);

}  // namespace recur::cli
