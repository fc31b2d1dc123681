// An MCP tool: its name, description, JSON Schemas for input and output, and the function that
// runs it. Tools never throw and never fail at the protocol level: a failure is a ToolResult
// with is_error and the reason (the client's model reads it and can correct the call). An error
// result is text only: structuredContent must match the tool's outputSchema (clients such as the
// official SDK validate it), and an error has no such record.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

namespace recur::mcp {

struct CallBudget {
  double timeout_s = 600;
  size_t max_output_bytes = size_t{4} << 20;
};

struct ToolResult {
  nlohmann::json structured = nlohmann::json::object();  // structuredContent (matches outputSchema); unused on errors
  std::string text;                                      // one short line for people
  bool is_error = false;
};

ToolResult tool_error(std::string reason);

struct Tool {
  std::string name;
  std::string title;
  std::string description;
  nlohmann::json input_schema;   // JSON Schema, type object
  nlohmann::json output_schema;  // JSON Schema, type object
  std::function<ToolResult(const nlohmann::json& arguments, const CallBudget& budget)> call;
};

}  // namespace recur::mcp
