#include "agent/loop_actions.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "kernels/registry.h"
#include "probe/bench_kernel.h"
#include "probe/check.h"
#include "probe/probe_cli.h"

namespace recur::agent {

namespace {

std::string action_arg(const Proposal& p, const std::string& key) {
  auto it = p.args.find(key);
  return it == p.args.end() ? "" : it->second;
}

}  // namespace

Result<Feedback> run_patch_action(const Proposal& p, const CandidateOptions& base, const std::string& patch_path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(patch_path).parent_path(), ec);
  {
    std::ofstream out(patch_path, std::ios::binary);
    out << p.patch;
    if (!out) return io_error("patch action: cannot write {}", patch_path);
  }
  CandidateOptions o = base;
  o.patch = patch_path;
  o.hypothesis = p.hypothesis;
  o.kernel = action_arg(p, "kernel");
  o.variant = action_arg(p, "variant");
  o.shape = action_arg(p, "shape");
  Feedback f = build_candidate(o);
  f.artifacts["patch"] = patch_path;
  return f;
}

Result<Feedback> run_probe_action(const Proposal& p, const std::map<std::string, std::string>& config) {
  const std::string kernel = action_arg(p, "kernel");
  auto knob = config.find(fmt::format("kernel.{}.variant", kernel));
  RECUR_ASSIGN_OR_RETURN(
      probe::KernelTarget t,
      probe::resolve_kernel_target(kernels::KernelRegistry::global(), kernel, action_arg(p, "variant"),
                                   action_arg(p, "vs"), action_arg(p, "shape"), knob == config.end() ? "" : knob->second));
  if (p.probe == "check") {
    probe::CheckOptions o;
    o.vs = t.vs;
    RECUR_ASSIGN_OR_RETURN(probe::CheckReport r, probe::check_variant(*t.spec, *t.variant, t.shape, o));
    Feedback f = probe::check_feedback(r, o);
    f.hypothesis = p.hypothesis;
    return f;
  }
  probe::KernelBenchOptions o;
  const std::string budget = action_arg(p, "budget_s");
  o.bench.budget_s = budget.empty() ? 2.0 : std::stod(budget);
  RECUR_ASSIGN_OR_RETURN(Feedback f, probe::bench_kernel(*t.spec, *t.variant, t.vs, t.shape, o));
  f.hypothesis = p.hypothesis;
  return f;
}

}  // namespace recur::agent
