// The evaluator of `recur candidate build` (docs/candidates.md): judges a variant that only a
// candidate's runner program can run, with the main tree's kernel spec (float64 reference,
// tolerances) and the main tree's best variant as the baseline.
//   check  probe::check_variant on a proxy variant whose every call ships the harness's
//          tensors to the runner (fresh seeds drawn here per run, all of check's defences);
//   bench  probe::bench_compare of the candidate runner against a runner of the main tree's
//          best variant, interleaved, timed by this process's clock around each request; the
//          inputs are redrawn before every sample and the candidate's last output is checked
//          against the reference afterwards;
//   cost   (between the two) instructions of repeated against fresh calls under callgrind
//          (candidate_cost.h): a runner that memoizes within a timed sample fails.
// Not thread-safe (it times things).
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "candidate/candidate_runner_client.h"
#include "core/feedback.h"
#include "kernels/registry.h"

namespace recur::agent {

struct EvaluateOptions {
  std::string kernel;   // "" = the kernel of the one variant the candidate adds
  std::string variant;  // "" = the one variant the candidate adds
  std::string shape;    // "" = the kernel's default
  std::string hypothesis;
  double bench_budget_s = 4;
  RunnerLaunch candidate;  // the candidate's runner
  RunnerLaunch baseline;   // a runner of the main tree (`recur candidate runner`)
  std::string cost_dir;    // callgrind's files for the cost check; "" = no cost check
  std::function<void(std::string_view)> progress;
};

// Fills `f` (probe, subject, verdict, metrics, notes, next); verdict kFailed with the reason in
// notes when the runner fails, no new variant is found, check does not confirm it, or the cost
// check finds memoization. A cost check that cannot run (no valgrind, an AVX-512 variant) is a note.
void evaluate_candidate(const kernels::KernelRegistry& main_registry, const EvaluateOptions& options, Feedback& f);

}  // namespace recur::agent
