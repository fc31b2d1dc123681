// The evaluator's deterministic cost check of a candidate (docs/candidates.md): does a call on
// inputs the runner has just seen cost as many instructions as a call on fresh inputs?
//
// The timed bench gives fresh inputs before every sample, but one sample is ITERS calls on the
// same tensors, so a runner that memoizes (computes the first call, copies its output for the
// rest) would look faster and still end with the right output. Here the candidate's runner runs
// under `valgrind --tool=callgrind` three times, the same warm-up request first each time, then
// K requests of:
//   one    1 call on fresh inputs;
//   fresh  N calls, each on its own fresh tensor set (the protocol's per-call sets);
//   repeat N calls on one tensor set, named N times (the same request text as `fresh`).
// Whole-process instruction totals are subtracted, so start-up and request parsing cancel:
//   fresh - one    = K (N-1) x (a fresh call + parsing N-1 more offset sets)
//   fresh - repeat = K (N-1) x (what a repeated call saves)
// An honest kernel saves nothing (instruction counts do not depend on whether the values were
// seen before); a memoizing one saves most of a call.
// Not thread-safe (spawns and waits for children).
#pragma once

#include <random>
#include <string>

#include "candidate/candidate_runner_client.h"
#include "core/status.h"
#include "kernels/registry.h"

namespace recur::agent {

struct CostCheckOptions {
  RunnerLaunch runner;  // the candidate's runner as the evaluator starts it
  std::string dir;      // callgrind's output files go here (a folder the runner's user may write)
  std::string valgrind = "valgrind";
  int requests = 2;  // K
  int calls = 4;     // N
};

struct CostCount {
  double fresh_call = 0;   // instructions of a call on fresh inputs
  double repeat_call = 0;  // instructions of a call on the inputs of the call before
  double repeat_ratio() const { return fresh_call > 0 ? repeat_call / fresh_call : 1; }
};

// kUnsupported when valgrind cannot run; another error when the runner fails under it (e.g. an
// AVX-512 variant, which valgrind cannot execute).
Result<CostCount> count_candidate_cost(const kernels::KernelSpec& spec, const kernels::Shape& shape,
                                       const std::string& variant, const CostCheckOptions& options, std::random_device& rd);

// A seed nobody knew before the evaluator drew it.
inline uint64_t evaluator_seed(std::random_device& rd) { return (uint64_t(rd()) << 32) ^ rd(); }

// Repeated calls cheaper than this fraction of a fresh call are memoization: the candidate fails.
inline constexpr double kMinRepeatCostRatio = 0.9;

}  // namespace recur::agent
