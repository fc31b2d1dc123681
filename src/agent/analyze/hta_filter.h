// HTA's exclusion of the last profiler step. When the traces of a job hold more than one
// distinct ProfilerStep#N name (over all ranks), HTA keeps, per rank, only
//   - the CPU rows that start before the last ProfilerStep starts (before the first CPU row if
//     the rank has no step), and
//   - the GPU rows whose correlation id matches one of those CPU rows, once per match (HTA
//     joins on correlation, so a GPU row matched by two CPU rows appears twice);
// a rank without CPU rows is kept whole. The last step is usually cut short by the profiler,
// so its kernels would bias the figures. Plain functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "analyze/hta_rows.h"

namespace recur::analyze {

// Whether HTA filters: more than one distinct step name over all ranks.
bool hta_filters_last_step(const std::vector<std::string>& distinct_step_names);

// The rows HTA keeps (in timestamp order; GPU partners re-pointed into the result).
HtaRows exclude_last_profiler_step(const HtaRows& in);

}  // namespace recur::analyze
