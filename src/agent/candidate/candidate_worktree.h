// A candidate's own tree (docs/candidates.md): a detached `git worktree` of the base revision
// in a scratch folder outside the source tree, the patch applied there (after `git apply
// --check`), and the build command run in it with a time limit. The main tree's files, index
// and HEAD are never touched; only git's worktree list gains an entry until remove().
// Not thread-safe (one candidate per object).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace recur::agent {

struct WorktreeOptions {
  std::string repo = ".";   // any folder inside the main tree
  std::string base = "HEAD";
  std::string scratch;      // "" = $TMPDIR/recur-candidates (must be outside the tree)
};

// The outcome of a shell step that ran (it may have failed).
struct StepResult {
  bool ok = false;
  bool timed_out = false;
  int exit_code = 0;
  std::string first_errors;  // the compiler's first error lines, or the output's tail
  double seconds = 0;
};

class CandidateWorktree {
 public:
  // Creates <scratch>/<id>/tree at the base revision. Errors: not a git tree, unknown
  // revision, scratch inside the tree, git refused.
  static Result<CandidateWorktree> create(const WorktreeOptions& options);

  // `git apply --check` then `git apply` of the patch file inside the worktree; the error
  // quotes git's reason.
  Status apply(const std::string& patch_path);
  // Runs `sh -c COMMAND` in the worktree, output to <dir>/build.log.
  StepResult build(const std::string& command, double timeout_s);
  // Removes the worktree and the scratch folder (git worktree remove --force, prune).
  void remove();

  const std::string& id() const { return id_; }
  const std::string& dir() const { return dir_; }    // <scratch>/<id>
  const std::string& tree() const { return tree_; }  // <dir>/tree
  const std::string& repo() const { return repo_; }  // the main tree's top level
  const std::string& base_commit() const { return base_commit_; }
  std::string build_log() const { return dir_ + "/build.log"; }

 private:
  std::string id_, dir_, tree_, repo_, base_commit_;
};

// The first lines of a build log that report errors ("error:", "Error "), at most `max_lines`,
// else its last lines.
std::string first_error_lines(const std::string& log, size_t max_lines = 6);

// Runs argv (no shell) with a time limit; stdout and stderr go to `log_path` (or are dropped).
StepResult run_logged(const std::vector<std::string>& argv, const std::string& cwd, const std::string& log_path,
                      double timeout_s);

}  // namespace recur::agent
