// Where an engine workload's time goes, by component (probe "analyze.time_split", tier 3): arm a
// runs the engine workload traced (one untimed run, then `runs` fresh sessions), every zone's
// self time (its duration minus its children's) is summed by the component that zone's work
// belongs to (engine_zone_component), and the shares of the total are the attribution (a
// decomposition: zones of no known component go to `unattributed`, never dropped).
//
// A component whose time (or excess) sits mostly in one layer (at least half of it, and twice the
// next layer's) is named with
// that layer ("engine:attention/layer[3]"), so a per-layer knob binds to it (search_space.h);
// each share's evidence lists its largest layers.
//
// With a reference arm b, both are split; when a is slower overall the attribution is the time
// a spends over b per component (only components where a is slower; the shares are of that
// excess), so a comparison between arms names what got slower, not what is big. When a is
// already the faster, what is left to gain is where a spends its time: its own split.
// Not thread-safe (the tracer is process-wide; one measurement at a time).
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "core/feedback.h"
#include "core/status.h"
#include "engine/model.h"
#include "gate/engine_probe.h"
#include "trace/event_table.h"

namespace recur::gate {

// The component an engine zone's self time belongs to ("matvec" -> "kernel:gemm", "attention"
// -> "engine:attention", ...); "" for a zone this table does not know.
std::string engine_zone_component(std::string_view zone);

// Every component engine_zone_component can return, and the zone names it knows: the agent's
// component -> knob map must cover each (agent/component_knobs.h; its test checks).
std::vector<std::string> engine_zone_components();

enum class SplitPhase { kDecode, kPrefill };

struct TimeSplit {
  std::map<std::string, double> us_by_component;  // per run (median over runs), "" = unattributed
  // The same by layer (the `layer` arg of the zone or its nearest enclosing zone; -1 = outside
  // any layer): component -> layer -> us per run (median over runs).
  std::map<std::string, std::map<int, double>> us_by_layer;
  double total_us = 0;
};

struct TimeSplitResult {
  TimeSplit a, b;  // b empty without a reference arm
  Feedback feedback;
};

// One trace's zones, self time summed by component and layer (a program's trace as the engine's).
TimeSplit split_trace(const trace::EventTable& table);

// The record of a split (against b when given, as above): probe analyze.time_split, the shares
// as its attribution (a decomposition), totals as metrics. The caller adds hypothesis and cost.
Feedback time_split_feedback(const TimeSplit& a, std::string_view a_name, const TimeSplit* b, std::string_view b_name,
                             std::string subject);

// Splits arm a's time (and b's, when b is given) on the workload: kDecode runs the workload's
// prompt and decode tokens, kPrefill its prompt with one decode token.
Result<TimeSplitResult> measure_time_split(const Model& model, ThreadPool& pool, const EngineWorkload& w,
                                          SplitPhase phase, const NamedConfig& a, const NamedConfig* b,
                                          const std::string& trace_out);

}  // namespace recur::gate
