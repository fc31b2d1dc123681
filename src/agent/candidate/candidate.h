// `recur candidate build --patch FILE` (docs/candidates.md): a code change proposed by an agent,
// judged without touching the main tree. The patch is applied in a fresh git worktree of the
// base revision (candidate_worktree.h), built there with a build command that produces a
// kernel-runner program (candidate_protocol.h), and its new variant is checked against the main
// tree's float64 reference and benched against the main tree's best variant by this process
// (candidate_evaluate.h). Everything ends in one Feedback record, probe "candidate.build";
// a patch that does not apply, a build that fails, a check that fails or a timeout is verdict
// `failed` with the reason as the first note.
// Not thread-safe (it times things).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/feedback.h"

namespace recur::agent {

// Builds only the runner of a recur tree (not the whole CLI): about the kernels libraries' time.
inline constexpr std::string_view kDefaultCandidateBuild =
    "cmake -S . -B build-candidate -G Ninja -DCMAKE_BUILD_TYPE=Release -DRECUR_BUILD_TESTS=OFF "
    "-DRECUR_BUILD_BENCHMARKS=OFF && cmake --build build-candidate --target recur-kernel-runner";
inline constexpr std::string_view kDefaultCandidateRunner = "build-candidate/src/agent/candidate/recur-kernel-runner";

struct CandidateOptions {
  std::string patch;         // the patch file (a unified diff, as `git diff` writes it)
  std::string repo = ".";    // the main tree (any folder inside it)
  std::string base = "HEAD";
  std::string scratch;       // "" = $TMPDIR/recur-candidates
  bool keep = false;         // keep the worktree and logs (named in the record's artifacts)
  double timeout_s = 1800;   // the whole candidate: build, check and bench
  std::string build_command = std::string(kDefaultCandidateBuild);  // sh -c, in the worktree
  std::string runner = std::string(kDefaultCandidateRunner);  // relative to the worktree; may hold arguments
  std::vector<std::string> baseline_runner;  // the main tree's runner (`recur candidate runner`)
  std::string kernel, variant, shape, hypothesis;
  double bench_budget_s = 4;
  std::function<void(std::string_view)> progress;
};

// Never an error: every outcome is a record (exit status 1 for verdict failed).
Feedback build_candidate(const CandidateOptions& options);

// The main tree's runner command: this program's `candidate runner` verb.
std::vector<std::string> self_runner_command();

}  // namespace recur::agent
