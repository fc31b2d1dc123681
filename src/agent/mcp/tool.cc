#include "mcp/tool.h"

namespace recur::mcp {

ToolResult tool_error(std::string reason) {
  ToolResult r;
  r.is_error = true;
  r.text = std::move(reason);
  return r;
}

}  // namespace recur::mcp
