// A parser for callgrind's output format (valgrind.org/docs/manual/cl-format.html), enough to
// attribute instruction counts to functions: headers, name compression "(id) name", relative
// positions (+n, -n, *), cost lines, and calls= lines whose next cost line is the inclusive
// cost of the call. Only the first event (Ir, instructions) is kept.
// Malformed input is an Error naming the line. Pure function; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "core/status.h"

namespace recur::probe {

struct CallgrindProfile {
  std::string events;    // "Ir"
  std::string trigger;   // the "desc: Trigger: ..." text
  uint64_t total = 0;    // summary/totals, or the sum of self costs
  std::map<std::string, uint64_t> self;                               // fn -> own cost
  std::map<std::string, std::map<std::string, uint64_t>> calls;       // caller -> callee -> inclusive cost
  uint64_t inclusive(const std::string& fn) const;                    // self + calls made
};

Result<CallgrindProfile> parse_callgrind(std::string_view text);

}  // namespace recur::probe
