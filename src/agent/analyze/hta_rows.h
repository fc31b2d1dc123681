// HtaRows: one rank's trace reduced to the rows HTA's analyses read, with HTA's loading rules
// applied (docs/analyses.md, "## hta"):
//   - only complete events with a category other than "Trace" (HTA drops events without `dur`
//     or `cat`; an empty category counts as none);
//   - when the file's timestamps are fractional µs, each start is rounded up and each end down
//     to whole µs, in float64 as HTA computes them (so a sub-µs event can end 1 µs before it
//     starts; HTA keeps that -1 µs duration and so do the rows);
//   - args.stream and args.correlation, -1 when absent (a stream that is not a number is -1);
//   - the GPU side of HTA's CPU/GPU split: stream >= 0 and correlation >= 0, or a device sync;
//   - each GPU event's correlated CPU call (and back), matched by correlation as HTA does.
// Rows stay in timestamp order (file order among equal timestamps). Plain value type.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analyze/hta_names.h"
#include "trace/event_table.h"

namespace recur::analyze {

struct HtaRow {
  // Flags.
  static constexpr uint8_t kGpu = 1;             // HTA's GPU-kernel filter holds
  static constexpr uint8_t kLinked = 2;          // has a correlated event on the other side
  static constexpr uint8_t kProfilerStep = 4;    // name is ProfilerStep#N
  static constexpr uint8_t kLaunchStatsCall = 8; // is_hta_launch_stats_call(name)
  static constexpr uint8_t kQueueLaunchCall = 16;// is_hta_queue_launch_call(name)
  static constexpr uint8_t kKernelCategory = 32; // is_hta_kernel_category(cat)

  int64_t ts = 0;            // ns; whole µs when the trace's timestamps were rounded
  int64_t dur = 0;           // ns; -1000 is possible after rounding (see above)
  int64_t stream = -1;       // args.stream, -1 when absent or not a number
  int64_t correlation = -1;  // args.correlation, -1 when absent
  // For a GPU row: the row of its correlated CPU call (the launch), or -1.
  int32_t partner = -1;
  HtaKernelType kernel_type = HtaKernelType::kOther;
  uint8_t flags = 0;

  int64_t end() const { return ts + dur; }
  bool has(uint8_t flag) const { return (flags & flag) != 0; }
  // HTA's analyses call every row with a stream other than -1 a GPU kernel.
  bool on_stream() const { return stream != -1; }
};

struct HtaRows {
  std::vector<HtaRow> rows;
  // Distinct ProfilerStep#N names seen (HTA's filter looks at their number over all ranks).
  std::vector<std::string> profiler_steps;
  bool rounded = false;  // fractional-µs timestamps were rounded (start up, end down)
};

// Extracts the rows of one rank's table (after EventTable::finalize()).
HtaRows hta_rows(const trace::EventTable& table);

}  // namespace recur::analyze
