// GPU time of one rank as HTA splits it, from the rows with a stream (HTA's "GPU kernels"):
//   span        last kernel end - first kernel start ("kernel_time" in HTA);
//   busy        |union of all kernels|; idle = span - busy;
//   compute     |union of computation kernels|; non-compute = span - compute - idle;
//   comm/comp   |union(communication) ∩ union(computation)| / |union(communication)|;
//   type mix    for each non-empty set S of {computation, communication, memory}: the time
//               when exactly the classes in S run ("COMPUTATION overlapping COMMUNICATION"),
//               each maximal interval truncated to whole µs as HTA's int cast does.
// Built on IntervalSet, so touching kernels merge and zero-length kernels add no busy time;
// they still count for the span. Plain function; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "analyze/hta_rows.h"

namespace recur::analyze {

struct HtaGpuTime {
  size_t kernels = 0;  // rows with a stream
  int64_t span_ns = 0, busy_ns = 0, compute_ns = 0, communication_ns = 0;
  int64_t comm_comp_overlap_ns = 0;
  // Indexed by a class mask: bit 0 computation, 1 communication, 2 memory; [0] unused.
  std::array<int64_t, 8> type_mix_us{};
  uint8_t type_mix_seen = 0;  // bit m: some time had exactly the class mask m

  int64_t idle_ns() const { return span_ns - busy_ns; }
  int64_t non_compute_ns() const { return span_ns - compute_ns - idle_ns(); }
};

HtaGpuTime hta_gpu_time(const HtaRows& rows);

// HTA's label for a class mask: the classes in HTA's order (COMPUTATION, COMMUNICATION,
// MEMORY) joined by " overlapping ".
std::string hta_type_mix_label(unsigned mask);

}  // namespace recur::analyze
