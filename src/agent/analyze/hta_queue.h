// HTA's queue length per stream: the number of launched but not yet started GPU operations.
// The runtime calls that enqueue work (CUDA/HIP/MTIA launches, memcpy, memset) and have a
// correlated GPU event count +1 on that event's stream at the call's start; each GPU row whose
// correlation id is one of those calls' counts -1 at the kernel's start. Per stream, events
// in time order (calls before kernels at equal times), the running sum is sampled after every
// event, and the samples are summarised as pandas' describe() does. Plain function;
// thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "analyze/hta_rows.h"
#include "analyze/hta_stats.h"

namespace recur::analyze {

struct HtaQueueRow {
  int64_t stream = 0;
  Describe length;
};

// Which step comes first when a call and a kernel start at the same time. HTA sorts with an
// unstable sort, so its order there follows the file's event order; the two fixed orders
// bracket it (docs/analyses.md).
enum class HtaQueueTies : uint8_t { kCallsFirst, kStartsFirst };

// Streams in ascending order.
std::vector<HtaQueueRow> hta_queue_length(const HtaRows& rows, HtaQueueTies ties = HtaQueueTies::kCallsFirst);

}  // namespace recur::analyze
