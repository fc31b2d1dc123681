#include "core/spawn.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace recur {

namespace {

// Live children: the pid to kill, negated when the child leads its own process group. 0 = free.
constexpr int kSlots = 256;
std::array<std::atomic<pid_t>, kSlots> g_children{};

int register_child(pid_t target) {
  for (int i = 0; i < kSlots; ++i) {
    pid_t expected = 0;
    if (g_children[i].compare_exchange_strong(expected, target)) return i;
  }
  return -1;  // full: the child still dies with us through PR_SET_PDEATHSIG
}

int exit_code_of(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

void kill_target(pid_t pid, bool group) {
  if (pid <= 0) return;
  if (group) ::kill(-pid, SIGKILL);
  ::kill(pid, SIGKILL);
}

extern "C" void on_termination_signal(int sig) {
  const int saved = errno;
  for (auto& slot : g_children) {
    const pid_t t = slot.load();
    if (t != 0) kill_target(t < 0 ? -t : t, t < 0);
  }
  // Die of the signal, as without the handler (the exit status says which signal).
  ::signal(sig, SIG_DFL);
  ::raise(sig);
  errno = saved;
}

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(const SpawnSpec& spec, char* const* argv, char* const* envp, pid_t parent, int report_fd) {
  if (spec.own_process_group) ::setpgid(0, 0);
  die_with_parent(parent);
  const int fds[3] = {spec.stdin_fd, spec.stdout_fd, spec.stderr_fd};
  for (int target = 0; target < 3; ++target)
    if (fds[target] >= 0 && ::dup2(fds[target], target) < 0) break;
  // The handlers the parent installed are not the child's business.
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE}) ::signal(sig, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  ::execvpe(argv[0], argv, envp);
  const int e = errno;
  [[maybe_unused]] ssize_t n = ::write(report_fd, &e, sizeof e);
  ::_exit(127);
}

}  // namespace

void die_with_parent(pid_t parent) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the parent died before prctl: follow it
}

ChildRegistration::ChildRegistration(pid_t pid, bool group) : slot_(register_child(group ? -pid : pid)) {}

ChildRegistration::~ChildRegistration() {
  if (slot_ >= 0) g_children[slot_].store(0);
}

SpawnedChild::SpawnedChild(pid_t pid, bool group) : pid_(pid), group_(group), slot_(register_child(group ? -pid : pid)) {}

SpawnedChild::SpawnedChild(SpawnedChild&& o) noexcept : pid_(o.pid_), group_(o.group_), slot_(o.slot_) {
  o.pid_ = -1;
  o.slot_ = -1;
}

SpawnedChild& SpawnedChild::operator=(SpawnedChild&& o) noexcept {
  if (this != &o) {
    release();
    pid_ = o.pid_;
    group_ = o.group_;
    slot_ = o.slot_;
    o.pid_ = -1;
    o.slot_ = -1;
  }
  return *this;
}

SpawnedChild::~SpawnedChild() { release(); }

void SpawnedChild::release() {
  if (pid_ > 0) {
    kill_target(pid_, group_);
    (void)finish(true);
  }
  if (slot_ >= 0) g_children[slot_].store(0);
  pid_ = -1;
  slot_ = -1;
}

void SpawnedChild::kill_now() const { kill_target(pid_, group_); }

// Waits (blocking or not) until the child has exited without reaping it, so its pid cannot be
// reused while it is still registered; then unregisters and reaps. -1: still running.
Result<int> SpawnedChild::finish(bool block) {
  siginfo_t info{};
  for (;;) {
    info.si_pid = 0;
    if (::waitid(P_PID, id_t(pid_), &info, WEXITED | WNOWAIT | (block ? 0 : WNOHANG)) == 0) break;
    if (errno != EINTR) return io_error("waitid {}: {}", pid_, std::strerror(errno));
  }
  if (info.si_pid == 0) return -1;
  if (slot_ >= 0) g_children[slot_].store(0);
  slot_ = -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  return exit_code_of(status);
}

Result<int> SpawnedChild::wait() { return finish(true); }
Result<int> SpawnedChild::poll() { return finish(false); }

Result<SpawnedChild> spawn_child(const SpawnSpec& spec) {
  if (spec.argv.empty()) return invalid_argument("spawn: empty argv");
  std::vector<char*> argv;
  for (const std::string& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::vector<char*> env;
  if (spec.env) {
    for (const std::string& e : *spec.env) env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);
  }
  char* const* envp = spec.env ? env.data() : environ;
  // exec's failure comes back through a close-on-exec pipe: nothing read means it started.
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return io_error("cannot run '{}': pipe: {}", spec.argv[0], std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int e = errno;
    ::close(report[0]);
    ::close(report[1]);
    return io_error("cannot run '{}': fork: {}", spec.argv[0], std::strerror(e));
  }
  if (pid == 0) exec_child(spec, argv.data(), envp, parent, report[1]);
  ::close(report[1]);
  // Set the group from here too, so a kill of -pid reaches it even before the child ran setpgid.
  if (spec.own_process_group) ::setpgid(pid, pid);
  SpawnedChild child(pid, spec.own_process_group);
  int e = 0;
  ssize_t n;
  while ((n = ::read(report[0], &e, sizeof e)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (n == sizeof e) {
    (void)child.wait();
    return io_error("cannot run '{}': {}", spec.argv[0], std::strerror(e));
  }
  return child;
}

void kill_children_on_termination_signals() {
  for (int sig : {SIGTERM, SIGINT, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) != 0) continue;
    if (old.sa_handler != SIG_DFL && old.sa_handler != on_termination_signal) continue;
    struct sigaction sa {};
    sa.sa_handler = on_termination_signal;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace recur
