// The component -> knob map (shared/DESIGN.md, "From feedback to action"): every component an
// attribution can name (engine zones through gate/time_split.h, op taps through
// gate/op_errors.h, kernels) either has knobs tagged with it, which the agent may change, or
// is declared here as acted on by no knob, which the agent reports as its finding ("no knob
// acts on engine:norm: a code change is needed") instead of wandering.
// component_knobs_test runs the engine and fails on a component that maps to nothing.
// Plain functions over the knob registry; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "loop/evidence.h"
#include "core/knobs.h"

namespace recur::agent {

// Work that no knob changes: the glue between kernels (norms, residual adds, the activation,
// the KDA mixer's gated norm, embedding lookup, routing scores, the forward's own loop).
inline constexpr std::string_view kComponentsWithoutKnobs[] = {
    "engine:norm",   "engine:residual", "engine:activation", "engine:kda_mixer",
    "engine:forward", "engine:embed",   "engine:router",
};

// The knobs tagged with the component or with what it is a part of (component_matches); a
// per-layer component ("engine:attention/layer[3]") also matches "[]" families.
std::vector<const KnobSpec*> knobs_for_component(std::string_view component,
                                                 const KnobRegistry& registry = KnobRegistry::global());
bool declared_without_knobs(std::string_view component);

// The evidence's components (with their shares) that no knob acts on: "engine:norm (12%)".
std::vector<std::string> knobless_components(const Evidence& ev);

// When the component the attribution ranks first is one no knob acts on: the request for a code
// change there, for a proposer that may submit patches ("the largest part of `decode_ratio(...)`
// is engine:norm (60%), which no knob acts on: a code change is needed there; propose a patch"),
// else "".
std::string patch_request(const Evidence& ev);

}  // namespace recur::agent
