// bench for registered kernels (`recur bench KERNEL --variant X [--vs Y]`) and for whole
// programs (`recur bench cmd -- COMMAND`), returning Feedback records.
//
// Kernel runs cycle through `rotate` input sets (each its own buffers, filled from a different
// seed) so a variant cannot profit from outputs cached per input, optionally flush the caches
// before every sample (writing a buffer larger than the last-level cache, capped at 256 MiB),
// and report the working set against the cache sizes and the achieved GB/s and GFLOP/s as
// fractions of the measured roofline (bench_roofline.h). Command runs time fork/exec to exit
// (wall time); a command that exits non-zero makes the verdict `failed`.
// Not thread-safe: one measurement at a time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/feedback.h"
#include "core/status.h"
#include "kernels/registry.h"
#include "probe/bench.h"
#include "probe/bench_roofline.h"

namespace recur::probe {

struct KernelBenchOptions {
  BenchOptions bench;
  int rotate = 4;                     // input sets cycled through
  bool flush_cache = false;
  BenchVerdict hypothesis = BenchVerdict::kFaster;  // about the candidate against the baseline
  std::optional<MachinePeaks> peaks;  // default: machine_peaks()
};

// Candidate `variant`, against `baseline` when given (else timed alone).
Result<Feedback> bench_kernel(const kernels::KernelSpec& spec, const kernels::VariantSpec& variant,
                              const kernels::VariantSpec* baseline, const kernels::Shape& shape,
                              const KernelBenchOptions& options);

// One side of a comparison: a kernel's variant at a shape.
struct KernelBenchTarget {
  const kernels::KernelSpec* spec = nullptr;
  const kernels::VariantSpec* variant = nullptr;
  kernels::Shape shape;
};

// As bench_kernel, where the baseline may be another kernel or shape (each side then gets its
// own rotated input sets; the rounds are interleaved the same way, so the ratio still cancels
// drift). The roofline is the candidate's.
Result<Feedback> bench_kernel_targets(const KernelBenchTarget& candidate, const KernelBenchTarget* baseline,
                                      const KernelBenchOptions& options);

struct CommandBenchOptions {
  BenchOptions bench;
  BenchVerdict hypothesis = BenchVerdict::kFaster;
};

// Times `command` (argv, run without a shell, stdout and stderr to /dev/null) against
// `baseline` when given, else against itself (an A/A run that measures the noise).
Result<Feedback> bench_command(const std::vector<std::string>& command, const std::vector<std::string>* baseline,
                               const CommandBenchOptions& options);

}  // namespace recur::probe
