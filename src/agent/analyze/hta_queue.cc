#include "analyze/hta_queue.h"

#include <algorithm>
#include <map>

#include "analyze/hta_join.h"

namespace recur::analyze {
namespace {

struct Step {
  int64_t ts;
  int delta;  // +1 enqueue, -1 start
};

}  // namespace

std::vector<HtaQueueRow> hta_queue_length(const HtaRows& in, HtaQueueTies ties) {
  const std::vector<HtaRow>& rows = in.rows;
  // GPU rows by correlation id (their streams), for the calls' side of the join.
  HtaJoin gpu(rows, [](const HtaRow& r) { return r.on_stream(); });
  HtaJoin calls(rows, [](const HtaRow& r) { return r.has(HtaRow::kQueueLaunchCall) && r.has(HtaRow::kLinked); });
  // Per stream: the calls' +1 steps, then the kernels' -1 steps (a stable sort by time then
  // keeps calls first at equal times; kStartsFirst sorts by step as well).
  std::map<int64_t, std::vector<Step>> steps_of;
  for (const HtaRow& r : rows) {
    if (!r.has(HtaRow::kQueueLaunchCall) || !r.has(HtaRow::kLinked)) continue;
    for (const auto& [corr, k] : gpu.find(r.correlation)) steps_of[rows[k].stream].push_back({r.ts, +1});
  }
  for (const HtaRow& r : rows) {
    if (r.on_stream() && calls.contains(r.correlation)) steps_of[r.stream].push_back({r.ts, -1});
  }
  std::vector<HtaQueueRow> out;
  for (auto& [stream, steps] : steps_of) {
    if (ties == HtaQueueTies::kCallsFirst) {
      std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) { return a.ts < b.ts; });
    } else {
      std::stable_sort(steps.begin(), steps.end(), [](const Step& a, const Step& b) {
        return a.ts < b.ts || (a.ts == b.ts && a.delta < b.delta);
      });
    }
    std::vector<double> lengths;
    lengths.reserve(steps.size());
    int64_t q = 0;
    for (const Step& s : steps) lengths.push_back(double(q += s.delta));
    out.push_back({stream, describe(lengths)});
  }
  return out;
}

}  // namespace recur::analyze
