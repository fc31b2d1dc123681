// Runs a program (argv, never a shell) with a wall-time limit and a cap on the stdout it may
// produce: the MCP tools' probes run as child `recur` processes and a gate's program workload
// runs the user's program (gate/program_probe.h), so a call that runs over its budget is killed
// (its process group, SIGKILL) without taking the caller down, and a program that crashes is an
// error the caller reports. Thread-compatible (one call per thread; uses fork/exec and waitpid on its own
// child only).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"

namespace recur {

struct ChildLimits {
  double timeout_s = 600;
  size_t max_stdout_bytes = size_t{4} << 20;
  size_t stderr_tail_bytes = 4096;  // the end of stderr is kept for error messages
  // "NAME=value" entries that replace (or add to) the parent's environment for the child.
  std::vector<std::string> env;
};

struct ChildResult {
  int exit_code = 0;         // 128 + signal when killed by one
  bool timed_out = false;    // killed at the time limit
  bool truncated = false;    // killed at the stdout limit
  std::string out;           // stdout (at most max_stdout_bytes)
  std::string err_tail;      // the last stderr_tail_bytes of stderr
  double seconds = 0;
};

// Errors only when the program cannot be started (kIo, names argv[0]); a run that fails, times
// out or overflows is a ChildResult that says so.
Result<ChildResult> run_child(const std::vector<std::string>& argv, const ChildLimits& limits);

}  // namespace recur
