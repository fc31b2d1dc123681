// bench_command (bench_kernel.h): whole programs, fork/exec to exit, wall time.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/spawn.h"
#include "probe/bench_kernel.h"

namespace recur::probe {
namespace {

// Runs argv to completion with stdout/stderr on /dev/null; returns the exit status or an error.
// The program dies with this process (core/spawn.h).
Result<int> run_once(const std::vector<std::string>& argv) {
  const int null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
  auto child = spawn_child({.argv = argv, .stdout_fd = null_fd, .stderr_fd = null_fd});
  if (null_fd >= 0) close(null_fd);
  if (!child) return io_error("bench cmd: {}", child.error().message());
  return child->wait();
}

}  // namespace

Result<Feedback> bench_command(const std::vector<std::string>& command, const std::vector<std::string>* baseline,
                               const CommandBenchOptions& options) {
  if (command.empty()) return invalid_argument("bench cmd: no command after --");
  if (baseline && baseline->empty()) return invalid_argument("bench cmd: --vs-cmd is empty");
  Feedback f;
  f.probe = "bench.cmd";
  f.tier = 3;
  const std::string cand_text = fmt::format("{}", fmt::join(command, " "));
  const std::string base_text = baseline ? fmt::format("{}", fmt::join(*baseline, " ")) : cand_text;
  f.subject = fmt::format("cmd:'{}'{}", cand_text, baseline ? fmt::format(" vs '{}'", base_text) : " (A/A)");
  const BenchVerdict hyp = baseline ? options.hypothesis : BenchVerdict::kSame;
  f.hypothesis = baseline ? fmt::format("'{}' is {} '{}'", cand_text,
                                        hyp == BenchVerdict::kFaster ? "faster than" : hyp == BenchVerdict::kSlower ? "slower than" : "as fast as",
                                        base_text)
                          : "the command against itself measures the same (A/A)";
  for (const auto* argv : {&command, baseline}) {
    if (argv == nullptr) continue;
    RECUR_ASSIGN_OR_RETURN(int status, run_once(*argv));
    if (status != 0) {
      f.verdict = Verdict::kFailed;
      f.notes.push_back(fmt::format("'{}' exited with status {}", fmt::join(*argv, " "), status));
      return f;
    }
  }
  int failures = 0;
  std::string failure;
  auto arm = [&](const std::vector<std::string>& argv) {
    return BenchArm{argv[0], [&argv, &failures, &failure](int64_t iters) {
                      for (int64_t i = 0; i < iters; ++i) {
                        auto s = run_once(argv);
                        if (!s || *s != 0) {
                          ++failures;
                          failure = s ? fmt::format("exit status {}", *s) : s.error().message();
                        }
                      }
                    }};
  };
  BenchOptions bo = options.bench;
  bo.target_sample_s = 0;  // one execution per sample
  bo.warmup_s = 0;
  BenchArm cand = arm(command);
  BenchArm base = baseline ? arm(*baseline) : cand;
  BenchResult r = bench_compare(base, cand, bo);
  f.cost_s = r.elapsed_s;
  add_bench_metrics(r, true, f);
  f.verdict = verdict_for_hypothesis(r.decision.verdict, hyp);
  if (failures > 0) {
    f.verdict = Verdict::kFailed;
    f.notes.push_back(fmt::format("{} runs failed during timing (last: {})", failures, failure));
  }
  f.notes.push_back("wall time from spawn to exit, one execution per sample");
  return f;
}

}  // namespace recur::probe
