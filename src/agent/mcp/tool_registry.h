// The tools a server offers, in registration order. The CLI registers the real ones
// (tools/builtin_tools.h); tests and the fuzz target register stubs. Not thread-safe while
// tools are added; read-only afterwards.
#pragma once

#include <string_view>
#include <vector>

#include "core/status.h"
#include "mcp/tool.h"

namespace recur::mcp {

class ToolRegistry {
 public:
  // Fails on a duplicate or empty name, a missing function, or schemas that are not objects
  // with "type": "object".
  Status add(Tool tool);
  const Tool* find(std::string_view name) const;
  const std::vector<Tool>& all() const { return tools_; }

 private:
  std::vector<Tool> tools_;
};

}  // namespace recur::mcp
