#include "candidate/candidate.h"

#include <unistd.h>

#include <chrono>
#include <filesystem>

#include <fmt/format.h>

#include "candidate/candidate_evaluate.h"
#include "candidate/candidate_worktree.h"
#include "kernels/registry.h"

namespace recur::agent {

namespace {

std::vector<std::string> candidate_words(std::string_view text) {
  std::vector<std::string> w;
  for (size_t i = 0; i < text.size();) {
    const size_t j = std::min(text.find_first_of(" \t", i), text.size());
    if (j > i) w.emplace_back(text.substr(i, j - i));
    i = j + 1;
  }
  return w;
}

}  // namespace

std::vector<std::string> self_runner_command() {
  std::error_code ec;
  const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).string();
  return {ec ? "recur" : exe, "candidate", "runner"};
}

Feedback build_candidate(const CandidateOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  auto say = [&](std::string_view line) {
    if (o.progress) o.progress(line);
  };
  Feedback f;
  f.probe = "candidate.build";
  f.tier = 2;
  f.subject = fmt::format("patch {}", o.patch);
  f.hypothesis = o.hypothesis.empty() ? "the patched variant is correct and faster than the main tree's best variant" : o.hypothesis;
  auto finish = [&](std::string failure) {
    if (!failure.empty()) {
      f.verdict = Verdict::kFailed;
      f.notes.insert(f.notes.begin(), std::move(failure));
    }
    f.cost_s = elapsed();
    return f;
  };
  if (std::error_code ec; !std::filesystem::is_regular_file(o.patch, ec))
    return finish(fmt::format("patch {}: not a readable file", o.patch));

  auto wt = CandidateWorktree::create({.repo = o.repo, .base = o.base, .scratch = o.scratch});
  if (!wt) return finish("worktree: " + wt.error().message());
  say(fmt::format("candidate {}: worktree {} at {}", wt->id(), wt->tree(), wt->base_commit().substr(0, 12)));
  f.artifacts["candidate"] = wt->id();
  f.artifacts["base"] = wt->base_commit();
  struct Cleanup {
    CandidateWorktree& w;
    bool keep;
    ~Cleanup() {
      if (!keep) w.remove();
    }
  } cleanup{*wt, o.keep};
  if (o.keep) {
    f.artifacts["worktree"] = wt->tree();
    f.artifacts["build_log"] = wt->build_log();
  }

  if (Status s = wt->apply(o.patch); !s) return finish(s.error().message());
  say(fmt::format("build: {}", o.build_command));
  const StepResult built = wt->build(o.build_command, std::max(1.0, o.timeout_s - elapsed()));
  f.add_metric("build_s", built.seconds, "s");
  if (built.timed_out) return finish(fmt::format("build timed out after {:.0f} s (--timeout-s)", built.seconds));
  if (!built.ok)
    return finish(fmt::format("build failed (exit {}); first errors:\n{}", built.exit_code, built.first_errors));

  std::vector<std::string> runner = candidate_words(o.runner);
  if (runner.empty()) return finish("--runner is empty");
  if (runner[0].find('/') != std::string::npos && !runner[0].starts_with("/")) runner[0] = wt->tree() + "/" + runner[0];
  if (std::error_code ec; runner[0].find('/') != std::string::npos && !std::filesystem::is_regular_file(runner[0], ec))
    return finish(fmt::format("the build left no runner at {} (--runner, relative to the worktree)", runner[0]));
  const double reply_s = std::max(1.0, std::min(60.0, o.timeout_s - elapsed()));
  EvaluateOptions eo{.kernel = o.kernel, .variant = o.variant, .shape = o.shape, .hypothesis = o.hypothesis,
                     .bench_budget_s = o.bench_budget_s,
                     .candidate = {.argv = runner, .cwd = wt->tree(), .stderr_path = wt->dir() + "/runner.err",
                                   .reply_timeout_s = reply_s},
                     .baseline = {.argv = o.baseline_runner.empty() ? self_runner_command() : o.baseline_runner,
                                  .cwd = "", .stderr_path = wt->dir() + "/baseline.err", .reply_timeout_s = reply_s},
                     .cost_dir = wt->dir() + "/callgrind",
                     .progress = o.progress};
  evaluate_candidate(kernels::KernelRegistry::global(), eo, f);
  if (elapsed() > o.timeout_s && f.verdict != Verdict::kFailed)
    return finish(fmt::format("the candidate took {:.0f} s, over --timeout-s {:.0f}", elapsed(), o.timeout_s));
  return finish("");
}

}  // namespace recur::agent
