// The evaluator's side of the kernel-runner protocol (candidate_protocol.h): starts a runner
// program as a child with its tensors in a memfd on fd 3, sends requests and waits for each
// reply with a time limit. The trust boundary (docs/candidates.md): the child sees only the
// tensors it is given; the evaluator keeps seeds, expected values and the clock. The evaluator
// marks itself non-dumpable, and a child started by root runs as `nobody`, so the child cannot
// read the evaluator's memory through /proc or ptrace.
// Not thread-safe: one request at a time per runner.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "candidate/candidate_protocol.h"
#include "core/status.h"
#include "core/tensor.h"

namespace recur::agent {

struct RunnerLaunch {
  std::vector<std::string> argv;  // argv[0] is looked up in PATH when it has no '/'
  std::string cwd;                // "" = the evaluator's
  std::string stderr_path;        // the child's stderr goes here (quoted in errors)
  double reply_timeout_s = 60;    // per request; the child is killed when it is exceeded
};

// Where each tensor of one call sits in a runner's shared memory: 64-byte aligned, inputs then
// outputs; `total` is a multiple of 64, so sets can follow one another.
struct SharedLayout {
  std::vector<uint64_t> offsets;
  std::vector<size_t> bytes;
  size_t total = 0;
};
SharedLayout shared_layout(std::span<const TensorView> in, std::span<const TensorView> out);

class KernelRunnerProcess {
 public:
  static Result<std::unique_ptr<KernelRunnerProcess>> start(const RunnerLaunch& launch);
  ~KernelRunnerProcess();
  KernelRunnerProcess(const KernelRunnerProcess&) = delete;
  KernelRunnerProcess& operator=(const KernelRunnerProcess&) = delete;

  // Every kernel/variant pair the runner can run.
  Result<std::vector<std::pair<std::string, std::string>>> variants();
  // The shared tensors, grown (and mapped again) to at least `bytes`.
  Result<char*> shared(size_t bytes);
  // One run request; an `error` reply, a timeout, an exit or any other output is an error.
  Status run(const RunnerRun& r);
  // Sends quit and waits up to `timeout_s` for the runner to exit (a runner under valgrind writes
  // its counts as it exits); an error when it does not exit cleanly in time (it is then killed).
  Status finish(double timeout_s);
  // The name for messages ("candidate runner ./runner").
  const std::string& name() const { return name_; }

 private:
  KernelRunnerProcess() = default;
  Result<std::string> request(const std::string& line);
  std::string stderr_tail() const;
  void kill_child();

  RunnerLaunch launch_;
  std::string name_;
  pid_t pid_ = -1;
  int to_child_ = -1, from_child_ = -1, shm_fd_ = -1;
  char* shm_ = nullptr;
  size_t shm_size_ = 0;
  std::string pending_;  // bytes read past the last reply line
};

}  // namespace recur::agent
