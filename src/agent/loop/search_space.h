// The agent's action space around a configuration: single-knob changes to the knobs tagged
// with a component (shared/DESIGN.md, "Knobs"). Nothing here knows an episode or an answer.
//
// A kernel's variant knob (`kernel.<k>.variant`) moves through the kernel's registered
// variants by their parameters: a variant is a point (prologue=per_tile, division=divide), and
// its neighbours are the runnable variants that differ from it in exactly one parameter (all
// other variants when it declares none). Enum knobs offer their other choices ("auto" is a
// policy, not a point, and is never proposed), booleans the other value, integers x2 and /2
// within range. Plain functions; thread-safe.
#pragma once

#include <optional>
#include <set>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "core/knobs.h"
#include "core/status.h"

namespace recur::agent {

struct Candidate {
  std::string knob;
  std::string value;
  std::string from;       // the current value
  std::string component;  // the attributed component that led here
  std::string why;        // one line: "variant neighbour: division divide -> rsqrt_rcp_newton"
  // Set by rank_changes (candidate_rank.h): the fraction of the deciding metric the change is
  // predicted to remove, and the prediction in words ("" when the change model has none).
  double expected_gain = 0;
  std::string prediction;
  std::string key() const { return knob + "=" + value; }
};

// Whether a knob tagged `tag` touches `component`: equal, or `component` is a part of the
// tag ("kernel:kda_decode/prologue" is part of "kernel:kda_decode").
bool component_matches(std::string_view tag, std::string_view component);

// The layer a component names ("engine:attention/layer[3]" -> 3; op_errors names a component
// so when one layer adds most of its error), or nullopt.
std::optional<int> component_layer(std::string_view component);

// The value the configuration gives a knob, with a variant knob's "auto" resolved to the
// variant it selects on this machine.
std::string effective_value(const Config& config, const KnobSpec& knob);

// The kernel and variant a change selects, when it selects one: a variant knob, or a knob
// tagged kernel:K whose old and new values both name variants of K (kernel.gemm.precision
// bf16 -> bf16x3 moves between the gemm kernel's bf16 and bf16x3 variants). Such a change can be screened by check (tier 1) before any
// engine or gate run.
std::optional<std::pair<std::string, std::string>> kernel_variant_of(const Candidate& c);

// Every single-knob change of one knob from `current` (its effective value): a variant knob's
// other runnable variants (not only its neighbours), an enum's other choices but "auto", a
// boolean's other value, an integer doubled and halved within range. `knob_name` may be an
// index of a "[]" family (`engine.kv_dtype.layer[3]`). The random proposer's action space.
std::vector<Candidate> changes_of(const KnobSpec& knob, const std::string& knob_name, const std::string& current);

// Single-knob changes of the knobs tagged with `component` (a per-layer knob only when the
// component names a layer, bound to it: engine.kv_dtype.layer[3]), excluding `fixed` knobs, in knob
// name order and each knob's declared order, those a kernel check can screen first (the
// cheapest refutation comes first).
std::vector<Candidate> candidates_for(std::string_view component, const Config& current,
                                      const std::set<std::string, std::less<>>& fixed,
                                      const KnobRegistry& registry = KnobRegistry::global());

}  // namespace recur::agent
