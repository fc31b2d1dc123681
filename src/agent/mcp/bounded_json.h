// Parsing one untrusted JSON-RPC line: the size and the nesting depth are checked on the raw
// bytes before the parser sees them, so a hostile line cannot exhaust the stack or memory.
// Pure functions; thread-safe.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "mcp/limits.h"

namespace recur::mcp {

// The deepest nesting of [ and { outside strings (0 for a scalar). Stops counting early once
// `stop_above` is exceeded.
int json_nesting_depth(std::string_view text, int stop_above);

// Errors: kInvalidArgument for a line over the limits (names the limit), kParse for malformed
// JSON (names the byte position).
Result<nlohmann::json> parse_bounded(std::string_view line, const Limits& limits);

}  // namespace recur::mcp
