// HTA's idle-time breakdown per stream. On each stream, the kernels (rows with a stream and a
// kernel/memcpy/memset category) in start order; the gap before each kernel is
//   gap = start - end of the previous kernel on the stream (not clipped: overlap is negative),
// and is put in one category:
//   host_wait    the kernel's launch (its correlated CPU call) started after the previous
//                kernel ended: the CPU did not enqueue work fast enough;
//   kernel_wait  otherwise, a gap below `kernel_wait_threshold_ns` (HTA: 30 µs): launch
//                overhead between back-to-back kernels;
//   other        the rest (e.g. waiting on an event from another stream).
// The first kernel of a stream has no gap but makes "other" appear (with 0), as in HTA. A
// category is listed when some kernel fell in it; ratio = category / stream total (NaN when
// the total is 0). Plain function; thread-safe.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "analyze/hta_rows.h"

namespace recur::analyze {

enum class HtaIdleCategory : uint8_t { kHostWait = 0, kKernelWait = 1, kOther = 2 };
std::string_view hta_idle_category_name(HtaIdleCategory c);  // "host_wait", ...

struct HtaIdleRow {
  int64_t stream = 0;
  HtaIdleCategory category = HtaIdleCategory::kOther;
  int64_t idle_ns = 0;
  double ratio = 0;  // of the stream's idle time; NaN when that is 0
};

inline constexpr int64_t kHtaKernelWaitThresholdNs = 30'000;

// Streams in order of their first kernel; categories in host, kernel, other order.
std::vector<HtaIdleRow> hta_idle_time(const HtaRows& rows,
                                      int64_t kernel_wait_threshold_ns = kHtaKernelWaitThresholdNs);

}  // namespace recur::analyze
