// Checks tool arguments against the tool's input schema before the tool runs. Understands the
// JSON Schema subset recur's tools use: type (one or a list), properties, required,
// additionalProperties (false), enum, items, minimum/maximum, minItems/maxItems, maxLength.
// Unknown keywords are ignored. Pure function; thread-safe.
#pragma once

#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace recur::mcp {

// Errors (kInvalidArgument) name the path and what was expected:
// "arguments.shape: expected a string, got 12".
Status check_against_schema(const nlohmann::json& value, const nlohmann::json& schema, std::string_view path = "arguments");

}  // namespace recur::mcp
