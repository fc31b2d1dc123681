// Safety limits of the MCP server (docs/mcp.md, "Safety"): what one request line, one JSON
// document and one tool call may cost. Plain data; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace recur::mcp {

struct Limits {
  size_t max_line_bytes = size_t{1} << 20;     // one JSON-RPC message (one line)
  int max_depth = 64;                          // nesting of arrays and objects in a message
  size_t max_batch = 64;                       // messages in one JSON-RPC batch
  double call_timeout_s = 600;                 // wall time of one tools/call
  size_t max_output_bytes = size_t{4} << 20;   // what one tool may produce (a child's stdout)
  std::vector<std::string> allow_exec;         // programs `bench_cmd` may run; empty = the tool is absent
};

}  // namespace recur::mcp
