#include "loop/loop_actions.h"

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "kernels/registry.h"
#include "probe/bench_kernel.h"
#include "probe/check.h"
#include "probe/probe_cli.h"

namespace recur::agent {

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
  o.kernel = p.target.kernel;
  o.variant = p.target.variant;
  // The candidate's runner protocol is text: the typed shape is written once, here.
  o.shape = p.target.shape ? p.target.shape->to_string() : "";
  Feedback f = build_candidate(o);
  f.artifacts["patch"] = patch_path;
  return f;
}

Result<Feedback> run_probe_action(const Proposal& p, const std::map<std::string, std::string>& config) {
  const KernelRequest& r = p.target;
  auto knob = config.find(fmt::format("kernel.{}.variant", r.kernel));
  RECUR_ASSIGN_OR_RETURN(probe::KernelTarget t,
                         probe::resolve_kernel_target(kernels::KernelRegistry::global(), r.kernel, r.variant, r.vs, "",
                                                      knob == config.end() ? "" : knob->second));
  if (r.shape) t.shape = *r.shape;  // checked against the kernel when the proposal was accepted
  if (p.probe == ProbeKind::kCheck) {
    probe::CheckOptions o;
    o.vs = t.vs;
    RECUR_ASSIGN_OR_RETURN(probe::CheckReport r, probe::check_variant(*t.spec, *t.variant, t.shape, o));
    Feedback f = probe::check_feedback(r, o);
    f.hypothesis = p.hypothesis;
    return f;
  }
  probe::KernelBenchOptions o;
  o.bench.budget_s = r.budget_s.value_or(2.0);
  RECUR_ASSIGN_OR_RETURN(Feedback f, probe::bench_kernel(*t.spec, *t.variant, t.vs, t.shape, o));
  f.hypothesis = p.hypothesis;
  return f;
}

}  // namespace recur::agent
