// Helpers for benchmarks that measure in fresh child processes (so each peak RSS is that of
// one run): peak RSS of this process, a monotonic clock, spawning this program again with its
// stdout captured, and median [min .. max] summaries. Header-only; not thread-safe.
#pragma once

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

extern char** environ;

namespace recur::bench {

// VmHWM (peak resident set) of this process, in bytes.
inline size_t peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return size_t(std::strtoull(line.c_str() + 6, nullptr, 10)) * 1024;
  }
  return 0;
}

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

struct ChildRun {
  std::string out;  // the child's stdout
  double wall_s = 0;  // spawn to exit
};

// Runs `args` (args[0] is the program) and captures its stdout; nullopt if it could not start
// or did not exit with status 0.
inline std::optional<ChildRun> run_child(std::vector<std::string> args) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return std::nullopt;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], 1);
  posix_spawn_file_actions_addclose(&fa, pipefd[0]);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ChildRun run;
  double t0 = now_s();
  pid_t pid;
  int spawned = posix_spawn(&pid, args[0].c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pipefd[1]);
  if (spawned != 0) {
    close(pipefd[0]);
    return std::nullopt;
  }
  char buf[256];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof buf)) > 0) run.out.append(buf, size_t(n));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  run.wall_s = now_s() - t0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  return run;
}

struct Stat {
  double med, lo, hi;
};
// Median (upper median for even counts), min and max; `v` must not be empty.
inline Stat stat(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

}  // namespace recur::bench
