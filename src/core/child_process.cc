#include "core/child_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

extern char** environ;

namespace recur {

namespace {

using Clock = std::chrono::steady_clock;

struct Pipe {
  int fd[2] = {-1, -1};
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
};

// Drains what is readable now; false at end of file.
bool drain(int fd, std::string& into, size_t keep_max, bool keep_tail, bool& overflow) {
  char buf[65536];
  ssize_t n = read(fd, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  into.append(buf, static_cast<size_t>(n));
  if (into.size() > keep_max) {
    if (keep_tail) into.erase(0, into.size() - keep_max);
    else overflow = true;
  }
  return true;
}

// The parent's environment with `overrides` ("NAME=value") replacing entries of the same name.
std::vector<std::string> child_environment(const std::vector<std::string>& overrides) {
  std::vector<std::string> out;
  auto name_of = [](std::string_view e) { return e.substr(0, e.find('=')); };
  for (char** e = environ; e && *e; ++e) {
    const std::string_view entry(*e);
    bool replaced = false;
    for (const std::string& o : overrides) replaced = replaced || name_of(o) == name_of(entry);
    if (!replaced) out.emplace_back(entry);
  }
  out.insert(out.end(), overrides.begin(), overrides.end());
  return out;
}

}  // namespace

Result<ChildResult> run_child(const std::vector<std::string>& argv, const ChildLimits& limits) {
  if (argv.empty()) return invalid_argument("run_child: empty argv");
  Pipe out, err;
  if (pipe2(out.fd, O_CLOEXEC) != 0 || pipe2(err.fd, O_CLOEXEC) != 0)
    return io_error("{}: pipe: {}", argv[0], std::strerror(errno));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out.fd[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err.fd[1], 2);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // its own group: a kill reaches its children
  posix_spawnattr_setpgroup(&attr, 0);
  pid_t pid = 0;
  const auto start = Clock::now();
  std::vector<std::string> env_entries;
  std::vector<char*> env_ptrs;
  char** child_env = environ;
  if (!limits.env.empty()) {
    env_entries = child_environment(limits.env);
    for (std::string& e : env_entries) env_ptrs.push_back(e.data());
    env_ptrs.push_back(nullptr);
    child_env = env_ptrs.data();
  }
  int rc = posix_spawn(&pid, args[0], &fa, &attr, args.data(), child_env);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) return io_error("cannot run '{}': {}", argv[0], std::strerror(rc));
  close(out.fd[1]);
  close(err.fd[1]);
  out.fd[1] = err.fd[1] = -1;

  ChildResult r;
  bool out_open = true, err_open = true, overflow = false, ignored = false;
  while ((out_open || err_open) && !r.timed_out && !overflow) {
    const double left = limits.timeout_s - std::chrono::duration<double>(Clock::now() - start).count();
    if (left <= 0) {
      r.timed_out = true;
      break;
    }
    pollfd fds[2] = {{out_open ? out.fd[0] : -1, POLLIN, 0}, {err_open ? err.fd[0] : -1, POLLIN, 0}};
    int n = poll(fds, 2, static_cast<int>(std::min(left * 1000 + 1, 1000.0)));
    if (n < 0 && errno != EINTR) break;
    if (out_open && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)))
      out_open = drain(out.fd[0], r.out, limits.max_stdout_bytes, false, overflow);
    if (err_open && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)))
      err_open = drain(err.fd[0], r.err_tail, limits.stderr_tail_bytes, true, ignored);
  }
  // Both pipes closed does not mean it exited: wait, still within the time limit.
  int status = 0;
  for (bool killed = false;;) {
    if (!killed && (r.timed_out || overflow)) {
      kill(-pid, SIGKILL);
      killed = true;
    }
    pid_t w = waitpid(pid, &status, killed ? 0 : WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) return io_error("{}: waitpid: {}", argv[0], std::strerror(errno));
    if (w == 0) {
      if (std::chrono::duration<double>(Clock::now() - start).count() >= limits.timeout_s) r.timed_out = true;
      else usleep(2000);
    }
  }
  r.truncated = overflow;
  if (overflow) r.out.resize(limits.max_stdout_bytes);
  r.exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

}  // namespace recur
