// knobs: the registered knobs (the agent's action space), in process: a read of the registry.
#include <fmt/format.h>

#include "core/knobs.h"
#include "mcp/tools/builtin_tools.h"

namespace recur::mcp {

using nlohmann::json;

Tool make_knobs_tool(const ToolEnv&) {
  Tool t;
  t.name = "knobs";
  t.title = "Knobs";
  t.description = "List the registered knobs (recur's action space): name, type, allowed values, default, and the "
                  "components each touches. `filter` keeps knobs whose name or a component contains it.";
  t.input_schema = object_schema({{"filter", {{"type", "string"}, {"maxLength", 200}}}});
  json knob = {{"type", "object"},
               {"properties",
                {{"name", {{"type", "string"}}},
                 {"type", {{"type", "string"}}},
                 {"default", {{"type", "string"}}},
                 {"choices", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                 {"range", {{"type", "array"}, {"items", {{"type", "number"}}}}},
                 {"components", {{"type", "array"}, {"items", {{"type", "string"}}}}},
                 {"help", {{"type", "string"}}}}},
               {"required", {"name", "type", "default", "components"}}};
  t.output_schema = object_schema({{"knobs", {{"type", "array"}, {"items", knob}}}}, {"knobs"});
  t.call = [](const json& args, const CallBudget&) {
    const std::string filter = args.value("filter", "");
    auto matches = [&](const KnobSpec& k) {
      if (filter.empty() || k.name.find(filter) != std::string::npos) return true;
      for (const std::string& c : k.components)
        if (c.find(filter) != std::string::npos) return true;
      return false;
    };
    json knobs = json::array();
    for (const KnobSpec* k : KnobRegistry::global().all()) {
      if (!matches(*k)) continue;
      json j = {{"name", k->name}, {"type", std::string(knob_type_name(k->type))}, {"default", k->default_value},
                {"components", k->components}, {"help", k->help}};
      if (k->type == KnobType::kEnum) j["choices"] = k->choices;
      if ((k->type == KnobType::kInt || k->type == KnobType::kFloat) && (k->min > -1e299 || k->max < 1e299))
        j["range"] = {k->min, k->max};
      knobs.push_back(std::move(j));
    }
    ToolResult r;
    r.text = fmt::format("{} knobs{}", knobs.size(), filter.empty() ? "" : fmt::format(" matching '{}'", filter));
    r.structured = {{"knobs", std::move(knobs)}};
    return r;
  };
  return t;
}

}  // namespace recur::mcp
