#include "mcp/tool_registry.h"

namespace recur::mcp {

Status ToolRegistry::add(Tool tool) {
  if (tool.name.empty()) return invalid_argument("tool: empty name");
  if (find(tool.name)) return invalid_argument("tool {}: registered twice", tool.name);
  if (!tool.call) return invalid_argument("tool {}: no function", tool.name);
  for (const auto* s : {&tool.input_schema, &tool.output_schema})
    if (!s->is_object() || s->value("type", "") != "object")
      return invalid_argument("tool {}: schemas must be objects with \"type\": \"object\"", tool.name);
  tools_.push_back(std::move(tool));
  return ok_status();
}

const Tool* ToolRegistry::find(std::string_view name) const {
  for (const Tool& t : tools_)
    if (t.name == name) return &t;
  return nullptr;
}

}  // namespace recur::mcp
