// The knob-efficacy check: every registered knob, for each of its values, either demonstrably
// changes what runs where it claims to act (KnobSpec::acts) or is declared not to act there.
// Data-driven from a registry, so a new knob that claims to act on the engine and changes
// nothing there fails it (knob_efficacy_test runs it over the global registry).
//
// The signal per place:
//   engine        tiny synthetic models (llama Q8_0, llama F16, hybrid with KDA, attention and
//                 MoE, a one-layer llama BF16 for its embedding table, deepseek2 and kimi-linear
//                 for MLA attention) run a batched prefill and
//                 decode steps through a session, then one batch forward, and the engine's sampler
//                 picks from its logits (greedy and sampled). The run's fingerprint: the logits'
//                 bits, every trace zone with its args (matvec dtype/precision, kda_decode variant,
//                 tp, ranks, ...), the batch's KV occupancy, the picked tokens, and an error that
//                 names the knob. knob=value must change the
//                 fingerprint against knob=default in some context: the defaults, or the defaults
//                 plus one other engine knob's value (engine.tp.reduce_dtype acts only at tp > 1).
//                 The model instance is shared as a gate shares it (gate/arm_engines.h): a knob
//                 not declared kEngineLoad is applied at run time only, so a load-time knob
//                 declared as run-time fails.
//   engine_load   as engine, plus the load's own record: the "load_model" zone's args (how the
//                 bytes are held, what is regrouped) and the pool's probe-conditions note.
//   serve, transfer, python, process: a declared, cheaper signal: the typed value the code
//                 there reads (a reader per knob; a knob claiming such a place without a reader
//                 fails): each value must resolve differently from the default.
//                 kernel.<k>.variant of a kernel the engine calls: the value "auto" resolves to
//                 runs the same code as the default, so it holds when an engine run's trace
//                 names it (zone <k>, arg variant=<value>) under the defaults or in a context
//                 (but not one setting another knob to that value).
//   kernel_probe  kernel.<k>.variant of a registered kernel, every value "auto" or a variant of
//                 it (the kernel probes run exactly that variant).
//   nowhere       declared dead; it must not be read by any engine run above.
// A knob read by the engine runs but not declared to act on the engine fails too.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/knobs.h"
#include "core/status.h"

namespace recur::gate {

struct KnobEfficacyFailure {
  std::string knob, value, why;
};

// The typed value a knob resolves to where it acts outside the engine (serve, transfer,
// python, process): different values that act resolve differently.
using KnobReader = std::function<Result<std::string>(const Config&)>;

struct KnobEfficacyOptions {
  std::map<std::string, KnobReader> readers;  // by knob name
  std::set<std::string> only;                 // check only these knobs (all when empty)
};

// The failures; empty when every knob's declaration holds.
Result<std::vector<KnobEfficacyFailure>> check_knob_efficacy(const KnobRegistry& registry,
                                                             const KnobEfficacyOptions& options);

}  // namespace recur::gate
