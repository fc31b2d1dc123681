// `recur knobs`: the registered knobs, the agent's action space.
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "core/knobs.h"

namespace recur::cli {
namespace {

std::string allowed(const KnobSpec& k) {
  switch (k.type) {
    case KnobType::kEnum: return fmt::format("{}", fmt::join(k.choices, "|"));
    case KnobType::kInt: case KnobType::kFloat:
      return k.min > -1e299 || k.max < 1e299 ? fmt::format("[{}, {}]", k.min, k.max) : std::string("any");
    case KnobType::kBool: return "true|false";
    case KnobType::kString: return "text";
  }
  return "";
}

void register_knobs(CLI::App& app, Invocation& inv) {
  auto as_json = std::make_shared<bool>(false);
  auto* cmd = app.add_subcommand("knobs", "List every registered knob: name, type, allowed values, default, "
                                          "the components it touches, where it acts (engine_load, engine, serve, transfer, "
                                          "python, kernel_probe, process, nowhere) and the value --set gives "
                                          "it in this run");
  cmd->add_flag("--json", *as_json, "Print a JSON array");
  cmd->callback([&inv, as_json] {
    inv.run = [as_json] {
      const Config& config = global_config();
      auto knobs = KnobRegistry::global().all();
      if (*as_json) {
        nlohmann::json out = nlohmann::json::array();
        for (const KnobSpec* k : knobs) {
          nlohmann::json j = {{"name", k->name}, {"type", std::string(knob_type_name(k->type))},
                              {"default", k->default_value}, {"components", k->components},
                              {"acts", knob_act_names(k->acts)}, {"help", k->help},
                              {"value", *config.get(k->name)}};
          if (k->type == KnobType::kEnum) j["choices"] = k->choices;
          if (k->type == KnobType::kInt || k->type == KnobType::kFloat) j["range"] = {k->min, k->max};
          out.push_back(j);
        }
        print_json(out);
        return kExitOk;
      }
      for (const KnobSpec* k : knobs) {
        std::string value = *config.get(k->name);
        fmt::print("{:<32} {:<6} {:<28} default {}{}\n", k->name, knob_type_name(k->type), allowed(*k), k->default_value,
                   value != k->default_value ? fmt::format(" (set: {})", value) : "");
        fmt::print("{:<32} {} [{}] acts: {}\n", "", k->help, fmt::join(k->components, ", "),
                   fmt::join(knob_act_names(k->acts), ", "));
      }
      return kExitOk;
    };
  });
}

}  // namespace

RECUR_CLI_COMMAND(knobs, register_knobs);

}  // namespace recur::cli
