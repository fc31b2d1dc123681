// Attribution: the loop's step 2. When the gate fails, the cheapest probe that can say *which
// component* explains the gap runs, and its Feedback becomes Evidence for the proposer
// (docs/agent.md, "The probe ladder"). Nothing here knows an episode.
//
// The deciding condition's metrics choose the probes:
//   kernel time (time_us, time_ratio, speedup)  bench.callgrind (tier 0): instruction split of
//       the candidate's variant by the kernel's regions; bench.kernel (tier 2): roofline class
//   kernel numerics (max_*_err, check_pass)     check.kernel (tier 1): worst shard and tile
//   engine agreement (tokens, logits)           check.engine_ops (tier 3): op-by-op error of the
//       candidate against the other arm, by the components of the ops that add it
//   engine throughput (and agreement without op taps)  analyze.config_diff (tier 0): the knobs
//       in which the failing arms differ, by the components they are tagged with
// Every probe is one journal experiment (decision none).
// Not thread-safe (probes time things).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "loop/episode.h"
#include "loop/experiment_log.h"
#include "loop/gate_state.h"
#include "core/feedback.h"
#include "kernels/registry.h"

namespace recur::agent {

struct Evidence {
  std::string condition;                // the deciding condition, as written
  std::vector<Attribution> components;  // most responsible first; never empty when found
  std::vector<std::string> findings;    // one line each, for hypotheses and the summary
};

struct AttributeOptions {
  bool instruction_counts = true;  // bench.callgrind (needs valgrind and this process to be `recur`)
  std::string callgrind_dir;       // where bench.callgrind keeps its dumps ("" = removed)
  std::string trace_dir;           // where timeline probes keep their traces ("" = a temporary folder)
};

// Runs the attribution probes for the gate's deciding condition on the candidate configuration.
Result<Evidence> attribute_gap(const Episode& episode, const std::map<std::string, std::string>& config,
                               const GateState& gate, ExperimentLog& log, const AttributeOptions& options);

// The parts of a kernel from an instruction split (bench.callgrind's Feedback), largest first,
// shares of the kernel's own work (harness regions and the unattributed rest named in the
// finding, left out). A split whose regions cover under half of the kernel's own counted
// instructions, or where a declared region matched none, is a broken mapping: a finding that
// says so, and no parts (it measures the mapping, not the kernel).
void add_region_parts(const kernels::KernelSpec& kernel, const Feedback& split, std::vector<Attribution>& parts,
                      std::vector<std::string>& findings);

// Whether a metric times a kernel (time_us, time_ratio, speedup).
bool is_kernel_time(gate::MetricSource s);

// The metric calls of a condition, left to right.
std::vector<gate::MetricRequest> metric_calls(const gate::Expr& e);

// The kernel workload an arm measures (the spec's kernel workload, with the arm's overrides).
gate::KernelWorkload kernel_workload_for(const gate::GateSpec& spec, std::string_view arm);

}  // namespace recur::agent
