// The kernel-runner protocol (docs/candidates.md): how the evaluator (`recur candidate build`)
// has a variant compiled from a candidate's tree compute outputs, without ever trusting it
// with the expected values or the clock.
//
// The runner is a program the evaluator starts: requests on its stdin, one reply line each on
// its stdout, the tensors in a shared-memory file on fd 3 (inputs written by the evaluator,
// outputs read back by it). Every tensor is contiguous and row-major with the dims the kernel's
// spec gives for the shape, at a byte offset into fd 3; inputs first, then outputs, in the
// spec's order.
//   variants                          -> ok K/V K/V ...   every kernel/variant it can run
//   run K V SHAPE ITERS OFF OFF ...   -> ok | error MESSAGE   run V ITERS times on those tensors
//     OFF... is one tensor set (every call uses it) or ITERS sets, one per call (call i uses the
//     i-th): the evaluator's cost check gives every call of a request fresh inputs that way.
//   quit                              -> (exits)
// Anything else on stdout is a protocol error. Plain functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace recur::agent {

// fd on which a runner finds the tensors' shared memory.
inline constexpr int kRunnerShmFd = 3;

struct RunnerRun {
  std::string kernel, variant, shape;  // shape as "M8,N256"
  int64_t iters = 1;
  std::vector<uint64_t> offsets;  // byte offsets in fd 3: inputs, then outputs; one set, or `iters` sets
};

std::string format_run_request(const RunnerRun& r);
// Parses the words after "run"; errors name the field and what was expected.
Result<RunnerRun> parse_run_request(std::string_view line);

// Splits on single spaces, dropping empty words.
std::vector<std::string> protocol_words(std::string_view line);

}  // namespace recur::agent
