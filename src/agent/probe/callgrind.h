// Deterministic mode of bench: instruction counts per function and per named region, from
// callgrind, with no timing noise at all (tier 0).
//
// bench_callgrind() re-executes this binary under `valgrind --tool=callgrind --instr-atstart=no`
// as `recur bench KERNEL --variant X --shape S --callgrind-child`; the child
// (run_callgrind_child) fills inputs, warms up uninstrumented, then brackets `iterations` calls
// with client requests (CALLGRIND_START_INSTRUMENTATION, ZERO_STATS, DUMP_STATS_AT), so the dump
// holds exactly the kernel calls. The parent parses the dump (callgrind_format.h) and reports
// instructions per call and, as a decomposition, the shares of the spec's named regions (or
// of the top functions by self cost) with the remainder as `unattributed`.
// Valgrind does not execute AVX-512: such variants are refused with kUnsupported.
// Not thread-safe (spawns and waits for a child).
#pragma once

#include <string>

#include "core/feedback.h"
#include "core/status.h"
#include "kernels/registry.h"
#include "probe/callgrind_format.h"

namespace recur::probe {

struct CallgrindOptions {
  int iterations = 3;             // kernel calls counted
  int top_functions = 4;          // when the spec declares no regions
  std::string valgrind = "valgrind";
  std::string self_exe = "/proc/self/exe";  // the recur binary to re-execute
  // Where the dumps are kept (created if missing) and named in the record's artifacts, e.g. a
  // run's artifact folder. "" = a private temporary folder, removed before returning (no
  // callgrind artifacts).
  std::string dump_dir;
};

Result<Feedback> bench_callgrind(const kernels::KernelSpec& spec, const kernels::VariantSpec& variant,
                                 const kernels::VariantSpec* baseline, const kernels::Shape& shape,
                                 const CallgrindOptions& options);

// The child's side: runs under callgrind; outside valgrind the client requests are no-ops.
Status run_callgrind_child(const kernels::KernelSpec& spec, const kernels::VariantSpec& variant,
                           const kernels::Shape& shape, int iterations);

// The decomposition of a profile into named regions (function-name substrings), or the top
// functions by self cost, plus `unattributed`; shares of profile.total. A region's cost is its
// functions' self cost plus their calls into functions outside every region, so nested regions
// are never counted twice.
std::vector<Attribution> attribute_regions(const CallgrindProfile& profile, const std::vector<kernels::RegionSpec>& regions,
                                           int top_functions, const std::string& component_prefix);

}  // namespace recur::probe
