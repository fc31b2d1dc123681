// The external proposers' protocol (docs/agent.md, "Proposers"), shared by CommandProposer and
// OpenAIProposer so that both see the same state and are held to the same rules:
//   state_json          the agent's state as one JSON document (the command proposer's stdin)
//   compact_state_json  the same, small enough for an LLM prompt: only the knobs tagged with the
//                       evidence's components or named in `next`, long strings and lists cut
//   excerpt             text safe to quote in a refusal (valid UTF-8, bounded)
//   first_json_object   the first JSON object in free text (an LLM wraps it in prose or fences)
//   parse_action        an action object -> a validated change, stop (nullopt), or a refusal
//                       whose message says what was wrong and what was expected
// Plain functions; thread-safe (the knob registry is read-only after start-up).
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "loop/proposer.h"
#include "core/status.h"

namespace recur::agent {

nlohmann::json state_json(const AgentState& state);
nlohmann::json compact_state_json(const AgentState& state);

// At most `max_bytes` of `text` as valid UTF-8 (invalid bytes replaced, cut at a character
// boundary, "..." when cut): answers quoted in refusals end up in the journal's JSON.
std::string excerpt(std::string_view text, size_t max_bytes = 200);

// The first balanced {...} in `text` that parses as JSON (objects inside strings are skipped
// with their string); an error quotes the start of the text.
Result<nlohmann::json> first_json_object(std::string_view text);

// Validates one action against the state:
//   {"action": "set", "knobs": {K: V}, "hypothesis": H}   one knob per change
//   {"knob": K, "value": V, "hypothesis": H}             the same, short form
//   {"action": "stop", ...}  or  {"stop": true}          -> nullopt
//   {"action": "patch", "patch": DIFF, "hypothesis": H [, "kernel", "variant", "shape"]}
//                                                        a code change (docs/candidates.md);
//                                                        only when state.allow_patches
//   {"action": "probe", "probe": "check"|"bench", "args": {"kernel": K [, "variant", "vs",
//    "shape", "budget_s"]} [, "hypothesis": H]}          one read-only kernel probe
// Refused (kInvalidArgument): other actions, two knobs, non-string values, unknown knobs or
// values, fixed knobs, no-op changes and changes already tried; patches when not allowed, not
// a unified diff or over 256 KiB; probes other than check/bench or of unknown kernels;
// arguments that are not single words. `who` (the proposer's name)
// prefixes messages and goes into the change's `why`.
Result<std::optional<Proposal>> parse_action(const nlohmann::json& action, const AgentState& state,
                                             std::string_view who);

}  // namespace recur::agent
