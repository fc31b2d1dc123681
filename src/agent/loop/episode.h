// An episode: a starting configuration, a workload and a gate (a gate spec), a budget and a
// description for people, read from TOML (docs/agent.md, "Episodes"). Writing one needs no code.
//
//   name = "kda-replayssm"
//   description = "ReplaySSM is on and KDA decode got slower ..."
//   gate = "gates/kda-replayssm.toml"   # a gate spec, relative to this file
//   candidate = "cand"                  # the gate arm the agent edits: its configuration is the
//                                       # agent's current configuration
//   budget_s = 300                      # probe seconds the agent may spend
//   max_experiments = 60
//   [start]                             # knobs set on the candidate arm before the first step,
//   "kernel.kda_replay_decode.variant" = "vtile"   # over the arm's own assignments
//   [search]
//   fixed = ["engine.tp"]               # knobs the agent must not change (what the workload is)
//   [expect]                            # optional, for the scorer (expect.h)
//   passes = true
//   root_cause = ["kernel.kda_replay_decode.variant=hoisted(_recip)?"]
//
// Plain data; thread-safe.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "loop/expect.h"
#include "core/knobs.h"
#include "core/status.h"
#include "gate/spec.h"

namespace recur::agent {

struct Episode {
  std::string path;  // the episode file
  std::string name;
  std::string description;
  std::string gate_path;  // resolved
  gate::GateSpec gate;
  std::string candidate;  // arm name
  // The candidate arm's knobs at the start: the arm's own assignments, then [start].
  std::map<std::string, std::string> start;
  double budget_s = 600;
  int max_experiments = 60;
  std::vector<std::string> fixed;  // never changed by the agent
  // What a good agent should do ([expect]); for the scorer only, never shown to a proposer.
  std::optional<Expect> expect;
};

// Parses and validates an episode (and its gate spec); `path` names it in messages and anchors
// the relative gate path. Knobs are checked against `registry`.
Result<Episode> parse_episode(std::string_view toml_text, std::string_view path,
                              const KnobRegistry& registry = KnobRegistry::global());
Result<Episode> load_episode(const std::string& path, const KnobRegistry& registry = KnobRegistry::global());

// The gate spec with the candidate arm's knobs replaced by `config` (knob -> value).
gate::GateSpec gate_with_candidate(const Episode& e, const std::map<std::string, std::string>& config);

}  // namespace recur::agent
