// The measurement behind zone_time_us(a, "SELECTOR"): time spent in trace zones of the engine.
//
// Arm a runs the engine workload (`warmup_runs` untimed, then `runs` fresh sessions of
// `prefill_tokens` + `decode_tokens`) with the tracer on; each run's timeline is captured and
// the zones that match the selector (analyze/selector.h: `name=attention`, `path~layer/kda`,
// ...; a bare word is an exact name) are measured as the union of their intervals per thread
// (nested matches count once), summed over threads, in us. The metric is the median over runs
// with a percentile-bootstrap 95% CI. The last run's trace is written to `trace_out` when given
// (Feedback artifact "trace"), so the time can be looked at zone by zone.
// Not thread-safe (the tracer is process-wide; one measurement at a time).
#pragma once

#include <string>
#include <string_view>

#include "core/feedback.h"
#include "core/status.h"
#include "engine/engine_bench.h"
#include "engine/model.h"
#include "gate/engine_probe.h"
#include "gate/evaluate.h"
#include "trace/event_table.h"

namespace recur::gate {

struct ZoneTimeMeasurement {
  MetricValue value;   // us per run
  Feedback feedback;   // probe "analyze.zone_time", tier 3
};

// One engine run (bench_engine with `o`) with the tracer on; its timeline.
Result<trace::EventTable> traced_engine_run(const Model& model, ThreadPool& pool, const EngineBenchOptions& o,
                                            const Config& config);

// Writes `table` to `path` (creating its folder) and names it as the Feedback's "trace"
// artifact, or notes why it could not; nothing when path is empty.
void attach_trace(const trace::EventTable& table, const std::string& path, Feedback& f);

Result<ZoneTimeMeasurement> measure_zone_time(const Model& model, ThreadPool& pool, const EngineWorkload& w,
                                              const NamedConfig& arm, std::string_view selector,
                                              const std::string& trace_out);

}  // namespace recur::gate
