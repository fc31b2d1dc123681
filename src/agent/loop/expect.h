// What an episode's author expects of a good agent: the optional [expect] table of an episode
// file (docs/agent.md, "Expected outcomes"). Only the scorer (`recur agent eval`, eval.h) and
// the suite check read it; no proposer input carries it (proposer_test greps every input).
//
//   [expect]
//   passes = true                          # false: no configuration in the search space passes
//   root_cause = ["kernel.kda_prefill.variant=chunked(64|16)"]   # knob=VALUE, VALUE a regex
//   decoys = ["kernel.kda_decode.variant"] # plausible knobs that must not be kept
//   why = "one line for people"
//   [expect.verify]                        # a configuration over [start] that passes the gate
//   "kernel.kda_prefill.variant" = "chunked64"
//
// Plain data; thread-safe.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "core/knobs.h"
#include "core/status.h"
#include "gate/toml_reader.h"

namespace recur::agent {

struct ExpectedChange {
  std::string knob;           // literal (an indexed knob names its index: engine.kv_dtype.layer[3])
  std::string value_pattern;  // ECMAScript regex that must match the whole value
  std::string text() const { return knob + "=" + value_pattern; }
  bool matches(std::string_view value) const;
};

struct Expect {
  bool passes = true;
  std::vector<ExpectedChange> root_cause;  // empty: change nothing (or nothing can pass)
  std::vector<std::string> decoys;  // knob names; a "[]" family ("engine.kv_dtype.layer[]") names every index
  std::string why;
  // Knobs over [start] that pass the gate (the suite check runs it); by default the root
  // cause entries whose value is a literal.
  std::map<std::string, std::string> verify;
};

// Reads the [expect] table. Errors name the file, position and what was expected: a root cause
// that is not "knob=regex" or names an unknown knob, a decoy that is also a root cause, a
// pattern without a concrete [expect.verify] value, a verify value its pattern does not match.
Result<Expect> parse_expect(gate::TomlTable& t, const KnobRegistry& registry);

// The value a configuration gives a knob: its assignment, else the knob's default.
std::string value_or_default(const std::map<std::string, std::string>& config, const std::string& knob);

// Whether `knob` is one of the decoys (an indexed knob belongs to a decoy family).
bool is_decoy(const Expect& e, std::string_view knob);

// How a run's final configuration compares with what was expected.
struct ExpectMatch {
  bool root_cause_named = false;          // every expected change is in the final configuration
  std::vector<std::string> missing;       // expected changes not made ("knob=pattern")
  std::vector<std::string> decoys_kept;   // decoy knobs whose final value differs from the start
  std::vector<std::string> extra;         // other changed knobs ("knob=value")
};
ExpectMatch match_expect(const Expect& e, const std::map<std::string, std::string>& start,
                         const std::map<std::string, std::string>& final_config);

}  // namespace recur::agent
