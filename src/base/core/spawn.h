// Starting child programs that die with recur. Every program a probe runs (gate program
// workloads, bench cmd, valgrind, the MCP tools' `recur` children) starts through spawn_child:
//   - the child gets PR_SET_PDEATHSIG(SIGKILL), so it is killed when recur dies, even by SIGKILL
//     (Linux sends it when the *thread* that spawned the child exits: spawn from long-lived
//     threads, as recur's probes do);
//   - while it runs, the child (and its process group when own_process_group) is registered, and
//     kill_children_on_termination_signals() makes SIGTERM, SIGINT and SIGHUP kill the registered
//     children and their groups before recur dies of the signal: a killed `recur agent run` leaves
//     no valgrind or program behind (reparented to PID 1, they would compete with the next run).
// Thread-safe: the registry is a fixed array of atomics, read by the signal handler.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "core/status.h"

namespace recur {

struct SpawnSpec {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it holds no '/'
  // Descriptors that become the child's stdin, stdout and stderr; -1 inherits the parent's.
  int stdin_fd = -1, stdout_fd = -1, stderr_fd = -1;
  const std::vector<std::string>* env = nullptr;  // the whole environment ("NAME=value"); null: the parent's
  bool own_process_group = false;                 // setpgid(0, 0): a kill of -pid reaches its descendants
};

// A started child, registered for termination-signal cleanup until it has been waited for.
class SpawnedChild {
 public:
  SpawnedChild() = default;
  explicit SpawnedChild(pid_t pid, bool group);
  SpawnedChild(SpawnedChild&& o) noexcept;
  SpawnedChild& operator=(SpawnedChild&& o) noexcept;
  SpawnedChild(const SpawnedChild&) = delete;
  SpawnedChild& operator=(const SpawnedChild&) = delete;
  ~SpawnedChild();  // unregisters; a child not waited for is killed (its group too) and reaped

  pid_t pid() const { return pid_; }
  // Blocks until the child exits; the exit code, or 128 + the signal that killed it.
  Result<int> wait();
  // Non-blocking: the exit code once it has exited, -1 while it runs.
  Result<int> poll();
  // SIGKILL to the child (its group when it has one).
  void kill_now() const;

 private:
  void release();
  Result<int> finish(bool block);
  pid_t pid_ = -1;
  bool group_ = false;
  int slot_ = -1;
};

// kIo naming argv[0] when the program cannot be started (not found, not executable).
Result<SpawnedChild> spawn_child(const SpawnSpec& spec);

// For children started by a fork/exec of their own (candidates' builds and runners): registers
// `pid` (its group when `group`) for the termination-signal cleanup while alive. Destroy it when
// the child has been reaped.
class ChildRegistration {
 public:
  ChildRegistration(pid_t pid, bool group);
  ~ChildRegistration();
  ChildRegistration(const ChildRegistration&) = delete;
  ChildRegistration& operator=(const ChildRegistration&) = delete;

 private:
  int slot_;
};

// In a forked child just before exec (after any change of user: that clears it): die by SIGKILL
// with `parent`, and exit at once if it is already gone. Async-signal-safe.
void die_with_parent(pid_t parent);

// Installs the SIGTERM/SIGINT/SIGHUP handlers that kill registered children, then let the signal
// take its default action. Idempotent; a handler installed by someone else is left alone.
void kill_children_on_termination_signals();

}  // namespace recur
