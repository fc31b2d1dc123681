// `recur candidate build --patch FILE`: judge an agent's code change in a git worktree of its
// own (agent/candidate.h, docs/candidates.md) and print one Feedback record. Exit 0 when the
// candidate was built, checked and benched (any bench verdict), 1 when it failed (patch does
// not apply, build fails, check fails, timeout), 2 on bad usage.
// `recur candidate runner`: the kernel-runner protocol over this binary's kernels, the
// evaluator's baseline (agent/candidate_protocol.h).
#include <cstdio>
#include <memory>

#include "candidate/candidate.h"
#include "candidate/candidate_runner_server.h"
#include "cli/cli.h"
#include "probe/probe_cli.h"

namespace recur::cli {
namespace {

struct CandidateBuildFlags {
  agent::CandidateOptions options;
  std::string baseline_runner;
  bool json = false;
  bool quiet = false;
};

int run_candidate_build(CandidateBuildFlags& fl) {
  if (!fl.quiet) fl.options.progress = [](std::string_view line) { std::fprintf(stderr, "candidate: %.*s\n", int(line.size()), line.data()); };
  if (!fl.baseline_runner.empty()) fl.options.baseline_runner = probe::split_words(fl.baseline_runner);
  const Feedback f = agent::build_candidate(fl.options);
  probe::print_feedback(f, fl.json);
  return f.verdict == Verdict::kFailed ? kExitFailure : kExitOk;
}

void register_candidate(CLI::App& app, Invocation& inv) {
  auto* group = app.add_subcommand("candidate", "Code changes proposed by an agent, judged in a worktree of their own "
                                                "(docs/candidates.md)");
  group->require_subcommand(1);

  auto fl = std::make_shared<CandidateBuildFlags>();
  agent::CandidateOptions& o = fl->options;
  auto* build = group->add_subcommand(
      "build",
      "Apply a patch in a fresh git worktree (the main tree is never modified), build its kernel runner, check the "
      "variant it adds against the float64 reference and bench it against the main tree's best variant. Prints one "
      "Feedback record. Exit 0 when built, checked and benched, 1 when the candidate failed, 2 on bad usage.");
  build->add_option("--patch", o.patch, "The change: a unified diff (git diff) against --base")->required();
  build->add_option("--kernel", o.kernel, "The kernel whose variant the patch adds (default: the only one it adds)");
  build->add_option("--variant", o.variant, "The variant to judge (default: the one the patch adds; name an existing "
                                            "one when the patch changes it)");
  build->add_option("--shape", o.shape, "Shape for check and bench, e.g. M64,N4096 (default: the kernel's)");
  build->add_option("--base", o.base, "Revision the worktree starts from")->capture_default_str();
  build->add_option("--repo", o.repo, "The main tree (any folder inside it)")->capture_default_str();
  build->add_option("--scratch", o.scratch, "Folder for worktrees, outside the tree (default $TMPDIR/recur-candidates)");
  build->add_option("--build-cmd", o.build_command, "Build command, run with sh -c in the worktree")->capture_default_str();
  build->add_option("--runner", o.runner, "The built runner program, relative to the worktree")->capture_default_str();
  build->add_option("--baseline-runner", fl->baseline_runner,
                    "Runner of the main tree's variants (default: this binary's `candidate runner`)");
  build->add_option("--hypothesis", o.hypothesis, "What the patch is meant to achieve (recorded in the record)");
  build->add_option("--budget-s", o.bench_budget_s, "Bench seconds")->capture_default_str()->check(CLI::Range(0.05, 600.0));
  build->add_option("--timeout-s", o.timeout_s, "Limit for the whole candidate (build, check, bench)")
      ->capture_default_str()
      ->check(CLI::Range(1.0, 86400.0));
  build->add_flag("--keep", o.keep, "Keep the worktree and its logs (their paths are in the record's artifacts)");
  build->add_flag("--json", fl->json, "Print the Feedback record as JSON");
  build->add_flag("--quiet", fl->quiet, "No progress lines on stderr");
  build->callback([&inv, fl] { inv.run = [fl] { return run_candidate_build(*fl); }; });

  auto* runner = group->add_subcommand(
      "runner", "Serve the kernel-runner protocol for this binary's kernels (requests on stdin, tensors on fd 3); the "
                "evaluator of `candidate build` starts it");
  runner->callback([&inv] { inv.run = [] { return agent::serve_kernel_runner(kernels::KernelRegistry::global()); }; });
}

}  // namespace

RECUR_CLI_COMMAND(candidate, register_candidate);

}  // namespace recur::cli
