#include "core/child_process.h"

#include "core/spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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
  const auto start = Clock::now();
  std::vector<std::string> env_entries;
  if (!limits.env.empty()) env_entries = child_environment(limits.env);
  const int devnull = open("/dev/null", O_RDONLY | O_CLOEXEC);
  // Its own group: a kill reaches its children; spawn_child makes it die with this process.
  auto spawned = spawn_child({.argv = argv, .stdin_fd = devnull, .stdout_fd = out.fd[1], .stderr_fd = err.fd[1],
                              .env = limits.env.empty() ? nullptr : &env_entries, .own_process_group = true});
  if (devnull >= 0) close(devnull);
  if (!spawned) return unexpected<Error>(spawned.error());
  SpawnedChild child = std::move(*spawned);
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
  int exit_code = -1;
  for (bool killed = false;;) {
    if (!killed && (r.timed_out || overflow)) {
      child.kill_now();
      killed = true;
    }
    RECUR_ASSIGN_OR_RETURN(exit_code, killed ? child.wait() : child.poll());
    if (exit_code >= 0) break;
    if (std::chrono::duration<double>(Clock::now() - start).count() >= limits.timeout_s) r.timed_out = true;
    else usleep(2000);
  }
  r.truncated = overflow;
  if (overflow) r.out.resize(limits.max_stdout_bytes);
  r.exit_code = exit_code;
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

}  // namespace recur
