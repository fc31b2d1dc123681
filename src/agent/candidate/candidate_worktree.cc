#include "candidate/candidate_worktree.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "core/spawn.h"

namespace recur::agent {

namespace {

namespace fs = std::filesystem;

std::string worktree_read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string worktree_trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// Runs git with its output captured; the error quotes git's first lines.
Result<std::string> git_output(const std::string& dir, std::vector<std::string> args, const std::string& scratch_log) {
  std::vector<std::string> argv = {"git", "-C", dir};
  argv.insert(argv.end(), args.begin(), args.end());
  StepResult r = run_logged(argv, "", scratch_log, 60);
  std::string out = worktree_read_file(scratch_log);
  std::error_code ec;
  fs::remove(scratch_log, ec);
  if (!r.ok)
    return make_error(ErrorCode::kFailedPrecondition, "git {}: {}", args.front(),
                      out.empty() ? fmt::format("exit {}", r.exit_code) : worktree_trim(first_error_lines(out, 4)));
  return worktree_trim(out);
}

std::string fresh_candidate_id() {
  std::random_device rd;
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  return fmt::format("{}-{:06x}", std::chrono::duration_cast<std::chrono::seconds>(now).count(), rd() & 0xffffff);
}

}  // namespace

StepResult run_logged(const std::vector<std::string>& argv, const std::string& cwd, const std::string& log_path,
                      double timeout_s) {
  StepResult r;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const int log_fd = ::open(log_path.empty() ? "/dev/null" : log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                            0644);
  if (log_fd < 0) {
    r.first_errors = fmt::format("cannot open {}: {}", log_path, std::strerror(errno));
    return r;
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    die_with_parent(parent);  // a killed agent takes its builds along (core/spawn.h)
    const int null_fd = ::open("/dev/null", O_RDONLY);
    dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    execvp(args[0], args.data());
    _exit(127);
  }
  ::close(log_fd);
  if (pid < 0) {
    r.first_errors = fmt::format("fork failed: {}", std::strerror(errno));
    return r;
  }
  if (pid > 0) setpgid(pid, pid);
  ChildRegistration registered(pid, true);
  int status = 0;
  while (true) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (r.seconds > timeout_s) {
      ::kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    usleep(5000);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  r.ok = !r.timed_out && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!r.ok && !log_path.empty()) r.first_errors = first_error_lines(worktree_read_file(log_path));
  return r;
}

std::string first_error_lines(const std::string& log, size_t max_lines) {
  std::vector<std::string> lines, errors;
  std::istringstream in(log);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  for (const std::string& l : lines) {
    if (l.find("error:") != std::string::npos || l.find("Error ") != std::string::npos ||
        l.find("fatal:") != std::string::npos)
      errors.push_back(l);
    if (errors.size() >= max_lines) break;
  }
  if (errors.empty()) {
    const size_t from = lines.size() > max_lines ? lines.size() - max_lines : 0;
    errors.assign(lines.begin() + long(from), lines.end());
  }
  std::string out;
  for (const std::string& e : errors) out += (out.empty() ? "" : "\n") + e.substr(0, 300);
  return out;
}

Result<CandidateWorktree> CandidateWorktree::create(const WorktreeOptions& o) {
  std::string scratch = o.scratch;
  if (scratch.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    scratch = fmt::format("{}/recur-candidates", tmp && *tmp ? tmp : "/tmp");
  }
  std::error_code ec;
  fs::create_directories(scratch, ec);
  if (ec) return io_error("scratch folder {}: {}", scratch, ec.message());
  scratch = fs::canonical(scratch, ec).string();
  CandidateWorktree w;
  w.id_ = fresh_candidate_id();
  w.dir_ = scratch + "/" + w.id_;
  // 0755: a runner started by root runs as nobody and must reach its binary.
  fs::create_directories(w.dir_, ec);
  if (ec) return io_error("scratch folder {}: {}", w.dir_, ec.message());
  fs::permissions(scratch, fs::perms(0755), fs::perm_options::add, ec);
  const std::string log = w.dir_ + "/git.log";
  RECUR_ASSIGN_OR_RETURN(w.repo_, git_output(o.repo, {"rev-parse", "--show-toplevel"}, log));
  const std::string rel = fs::relative(w.dir_, w.repo_).string();
  if (!rel.starts_with("..")) {
    fs::remove_all(w.dir_, ec);
    return invalid_argument("scratch folder {} is inside the tree {}: candidates must live outside it", scratch, w.repo_);
  }
  RECUR_ASSIGN_OR_RETURN(w.base_commit_, git_output(w.repo_, {"rev-parse", "--verify", o.base + "^{commit}"}, log));
  w.tree_ = w.dir_ + "/tree";
  auto added = git_output(w.repo_, {"worktree", "add", "--detach", w.tree_, w.base_commit_}, log);
  if (!added) {
    fs::remove_all(w.dir_, ec);
    return unexpected<Error>(added.error());
  }
  return w;
}

Status CandidateWorktree::apply(const std::string& patch_path) {
  std::error_code ec;
  const std::string copy = dir_ + "/candidate.patch";
  fs::copy_file(patch_path, copy, fs::copy_options::overwrite_existing, ec);
  if (ec) return io_error("patch {}: {}", patch_path, ec.message());
  const std::string log = dir_ + "/apply.log";
  auto checked = git_output(tree_, {"apply", "--check", copy}, log);
  if (!checked) return invalid_argument("patch {} does not apply to {}: {}", patch_path, base_commit_.substr(0, 12),
                                        checked.error().message());
  RECUR_RETURN_IF_ERROR(git_output(tree_, {"apply", copy}, log));
  return ok_status();
}

StepResult CandidateWorktree::build(const std::string& command, double timeout_s) {
  return run_logged({"/bin/sh", "-c", command}, tree_, build_log(), timeout_s);
}

void CandidateWorktree::remove() {
  if (tree_.empty()) return;
  const std::string log = dir_ + "/remove.log";
  (void)git_output(repo_, {"worktree", "remove", "--force", tree_}, log);
  (void)git_output(repo_, {"worktree", "prune"}, log);
  std::error_code ec;
  fs::remove_all(dir_, ec);
  tree_.clear();
}

}  // namespace recur::agent
