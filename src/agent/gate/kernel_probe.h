// The kernel measurements behind a gate's kernel metrics, each one call of an existing probe:
//   time_us(a)           bench.kernel, the arm's variant timed alone (median per call, CI)
//   time_ratio(a vs b)   bench.kernel, a against b interleaved (ratio of times with CI);
//   speedup(a vs b)      is its reciprocal
//   max_rel_err(a [vs b]), max_abs_err, check_pass
//                        check.kernel of a's variant against the float64 reference (and b's
//                        variant, and a split into the workload's partitions)
// An arm's variant is its `kernel.<name>.variant` knob ("auto" = the best this machine runs); an
// arm's kernel and shape are its workload's (arm_kernel_workload, which the gate passes).
// Not thread-safe (one measurement at a time).
#pragma once

#include <optional>
#include <string>

#include "core/feedback.h"
#include "core/knobs.h"
#include "core/status.h"
#include "gate/evaluate.h"
#include "gate/spec.h"
#include "probe/bench_roofline.h"

namespace recur::gate {

struct KernelProbeOptions {
  std::optional<probe::MachinePeaks> peaks;  // default: machine_peaks() (measured once, cached)
};

struct KernelMeasurement {
  MetricValue value;
  Feedback feedback;
};

// time_us of one arm.
Result<KernelMeasurement> measure_kernel_time(const KernelWorkload& w, const Config& arm,
                                              const KernelProbeOptions& options);
// time_ratio of a over b (candidate a, baseline b), each on its own workload (arm_kernel_workload):
// on the same kernel and shape they share inputs; otherwise each side has its own, and the
// interleaved rounds still pair them.
Result<KernelMeasurement> measure_kernel_ratio(const KernelWorkload& wa, const Config& a, const KernelWorkload& wb,
                                               const Config& b, const KernelProbeOptions& options);
// The same, both arms on workload w.
Result<KernelMeasurement> measure_kernel_ratio(const KernelWorkload& w, const Config& a, const Config& b,
                                               const KernelProbeOptions& options);

struct KernelCheckMeasurement {
  double max_rel_err = 0, max_abs_err = 0;  // against the reference, or against b when b is given
  bool pass = false;                        // check's verdict is confirmed
  Feedback feedback;
};

// check.kernel of a; with b, also a against b's variant (the errors are then a vs b).
Result<KernelCheckMeasurement> measure_kernel_check(const KernelWorkload& w, const Config& a, const Config* b,
                                                    const KernelProbeOptions& options);

}  // namespace recur::gate
