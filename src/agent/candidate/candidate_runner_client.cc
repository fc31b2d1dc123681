#include "candidate/candidate_runner_client.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "core/spawn.h"

namespace recur::agent {

namespace {

constexpr uid_t kNobody = 65534;

// Writes all of `data`, retrying short writes.
bool runner_write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(size_t(n));
  }
  return true;
}

// The same file moved to a descriptor >= 10, so that the child's dup2 onto 0..3 never meets one
// of its own sources (dup2 onto itself would keep close-on-exec).
int runner_high_fd(int fd) {
  if (fd < 0) return fd;
  const int high = fcntl(fd, F_DUPFD_CLOEXEC, 10);
  ::close(fd);
  return high;
}

}  // namespace

SharedLayout shared_layout(std::span<const TensorView> in, std::span<const TensorView> out) {
  SharedLayout l;
  for (auto views : {in, out}) {
    for (const TensorView& v : views) {
      l.offsets.push_back(l.total);
      l.bytes.push_back(size_t(v.numel()) * dtype_size(v.dtype()));
      l.total += (l.bytes.back() + 63) / 64 * 64;
    }
  }
  l.total = std::max<size_t>(l.total, 64);
  return l;
}

Result<std::unique_ptr<KernelRunnerProcess>> KernelRunnerProcess::start(const RunnerLaunch& launch) {
  if (launch.argv.empty()) return invalid_argument("runner: empty command");
  // The child must not read the expected values out of this process (/proc/PID/mem, ptrace).
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  signal(SIGPIPE, SIG_IGN);  // a runner that exits early is an error reply, not a crash here
  std::unique_ptr<KernelRunnerProcess> p(new KernelRunnerProcess());
  p->launch_ = launch;
  p->name_ = launch.argv[0];
  p->shm_fd_ = runner_high_fd(memfd_create("recur-candidate-tensors", MFD_CLOEXEC));
  if (p->shm_fd_ < 0) return io_error("runner {}: memfd_create failed: {}", p->name_, std::strerror(errno));
  const int err_fd = runner_high_fd(
      launch.stderr_path.empty() ? ::open("/dev/null", O_WRONLY | O_CLOEXEC)
                                 : ::open(launch.stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (err_fd < 0) return io_error("runner {}: cannot open {}: {}", p->name_, launch.stderr_path, std::strerror(errno));
  int to[2], from[2];
  if (pipe2(to, O_CLOEXEC) != 0 || pipe2(from, O_CLOEXEC) != 0) {
    ::close(err_fd);
    return io_error("runner {}: pipe failed: {}", p->name_, std::strerror(errno));
  }
  for (int* fd : {&to[0], &to[1], &from[0], &from[1]}) *fd = runner_high_fd(*fd);
  std::vector<char*> argv;
  for (const std::string& a : launch.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const bool drop_root = geteuid() == 0;
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // Only async-signal-safe calls until exec.
    setpgid(0, 0);
    dup2(to[0], 0);
    dup2(from[1], 1);
    dup2(err_fd, 2);
    dup2(p->shm_fd_, kRunnerShmFd);
    close_range(kRunnerShmFd + 1, ~0U, 0);
    if (!launch.cwd.empty() && chdir(launch.cwd.c_str()) != 0) _exit(126);
    if (drop_root && (setgroups(0, nullptr) != 0 || setgid(kNobody) != 0 || setuid(kNobody) != 0)) _exit(125);
    die_with_parent(parent);  // after setuid, which clears it: a killed agent takes its runner along
    execvp(argv[0], argv.data());
    _exit(127);
  }
  ::close(to[0]);
  ::close(from[1]);
  ::close(err_fd);
  if (pid < 0) {
    ::close(to[1]);
    ::close(from[0]);
    return io_error("runner {}: fork failed: {}", p->name_, std::strerror(errno));
  }
  p->pid_ = pid;
  p->to_child_ = to[1];
  p->from_child_ = from[0];
  return p;
}

KernelRunnerProcess::~KernelRunnerProcess() {
  if (pid_ > 0) {
    runner_write_all(to_child_, "quit\n");
    ::close(to_child_);
    to_child_ = -1;
    // A runner that ignores quit is killed after a short grace.
    for (int i = 0; i < 100; ++i) {
      if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
      usleep(10000);
    }
    if (pid_ > 0) kill_child();
  }
  for (int fd : {to_child_, from_child_, shm_fd_})
    if (fd >= 0) ::close(fd);
  if (shm_ != nullptr) munmap(shm_, shm_size_);
}

Status KernelRunnerProcess::finish(double timeout_s) {
  if (pid_ <= 0) return make_error(ErrorCode::kFailedPrecondition, "{}: the runner is not running", name_);
  runner_write_all(to_child_, "quit\n");
  ::close(to_child_);
  to_child_ = -1;
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(timeout_s);
  siginfo_t exited{};
  while (waitid(P_PID, id_t(pid_), &exited, WEXITED | WNOHANG | WNOWAIT) != 0 || exited.si_pid != pid_) {
    if (Clock::now() > deadline) {
      kill_child();
      return make_error(ErrorCode::kTimeout, "{}: did not exit within {:.0f} s of 'quit' (killed){}", name_, timeout_s,
                        stderr_tail());
    }
    usleep(5000);
  }
  ::kill(-pid_, SIGKILL);  // what it left running in its group (still ours: the leader is not reaped yet)
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return ok_status();
  return make_error(ErrorCode::kFailedPrecondition, "{}: exited with {} after 'quit'{}", name_,
                    WIFSIGNALED(status) ? fmt::format("signal {}", WTERMSIG(status))
                                        : fmt::format("status {}", WEXITSTATUS(status)),
                    stderr_tail());
}

void KernelRunnerProcess::kill_child() {
  if (pid_ <= 0) return;
  ::kill(-pid_, SIGKILL);
  ::kill(pid_, SIGKILL);
  waitpid(pid_, nullptr, 0);
  pid_ = -1;
}

std::string KernelRunnerProcess::stderr_tail() const {
  if (launch_.stderr_path.empty()) return "";
  std::ifstream in(launch_.stderr_path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > 600) s = "..." + s.substr(s.size() - 600);
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s.empty() ? "" : fmt::format("; its stderr ends: {}", s);
}

Result<std::string> KernelRunnerProcess::request(const std::string& line) {
  if (pid_ <= 0) return make_error(ErrorCode::kFailedPrecondition, "{}: the runner is not running", name_);
  if (!runner_write_all(to_child_, line + "\n")) {
    kill_child();
    return io_error("{}: the runner stopped reading requests{}", name_, stderr_tail());
  }
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::duration<double>(launch_.reply_timeout_s);
  while (true) {
    if (const size_t nl = pending_.find('\n'); nl != std::string::npos) {
      std::string reply = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return reply;
    }
    const double left_ms = std::chrono::duration<double, std::milli>(deadline - Clock::now()).count();
    if (left_ms <= 0) {
      kill_child();
      return make_error(ErrorCode::kTimeout, "{}: no reply to '{}' within {:.0f} s (killed){}", name_,
                        line.substr(0, 60), launch_.reply_timeout_s, stderr_tail());
    }
    pollfd pfd{.fd = from_child_, .events = POLLIN, .revents = 0};
    const int ready = poll(&pfd, 1, int(std::min(left_ms, 1e9)) + 1);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;
    char buf[4096];
    const ssize_t n = ::read(from_child_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int status = 0;
      waitpid(pid_, &status, 0);
      pid_ = -1;
      const std::string how = WIFSIGNALED(status) ? fmt::format("was killed by signal {}", WTERMSIG(status))
                                                  : fmt::format("exited with status {}", WEXITSTATUS(status));
      return io_error("{}: the runner {} before replying to '{}'{}", name_, how, line.substr(0, 60), stderr_tail());
    }
    pending_.append(buf, size_t(n));
    if (pending_.size() > (size_t{1} << 20)) {
      kill_child();
      return io_error("{}: more than 1 MiB of output without a reply line", name_);
    }
  }
}

Result<std::vector<std::pair<std::string, std::string>>> KernelRunnerProcess::variants() {
  RECUR_ASSIGN_OR_RETURN(std::string reply, request("variants"));
  std::vector<std::string> w = protocol_words(reply);
  if (w.empty() || w[0] != "ok")
    return make_error(ErrorCode::kFailedPrecondition, "{}: 'variants' answered '{}', expected 'ok K/V ...'", name_,
                      reply.substr(0, 200));
  std::vector<std::pair<std::string, std::string>> out;
  for (size_t i = 1; i < w.size(); ++i) {
    const size_t slash = w[i].find('/');
    if (slash == std::string::npos)
      return make_error(ErrorCode::kFailedPrecondition, "{}: variant '{}' is not KERNEL/VARIANT", name_, w[i]);
    out.emplace_back(w[i].substr(0, slash), w[i].substr(slash + 1));
  }
  return out;
}

Result<char*> KernelRunnerProcess::shared(size_t bytes) {
  if (bytes <= shm_size_) return shm_;
  if (ftruncate(shm_fd_, off_t(bytes)) != 0)
    return io_error("{}: cannot grow the shared tensors to {} bytes: {}", name_, bytes, std::strerror(errno));
  if (shm_ != nullptr) munmap(shm_, shm_size_);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, shm_fd_, 0);
  if (p == MAP_FAILED) {
    shm_ = nullptr;
    shm_size_ = 0;
    return io_error("{}: mmap of {} shared bytes failed: {}", name_, bytes, std::strerror(errno));
  }
  shm_ = static_cast<char*>(p);
  shm_size_ = bytes;
  return shm_;
}

Status KernelRunnerProcess::run(const RunnerRun& r) {
  RECUR_ASSIGN_OR_RETURN(std::string reply, request(format_run_request(r)));
  if (reply == "ok") return ok_status();
  if (reply.starts_with("error "))
    return make_error(ErrorCode::kFailedPrecondition, "{}: run {} {}: {}", name_, r.kernel, r.variant, reply.substr(6));
  kill_child();  // out of step with the protocol: nothing it says later can be trusted
  return make_error(ErrorCode::kFailedPrecondition, "{}: run {} {}: answered '{}', expected 'ok' or 'error MESSAGE'",
                    name_, r.kernel, r.variant, reply.substr(0, 200));
}

}  // namespace recur::agent
