#include "loop/episode.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "loop/knob_table.h"
#include "journal/run_name.h"
#include "gate/toml_reader.h"
#include "kernels/registry.h"

namespace recur::agent {

namespace {

namespace fs = std::filesystem;
using gate::TomlTable;

}  // namespace

Result<Episode> parse_episode(std::string_view toml_text, std::string_view path, const KnobRegistry& registry) {
  const std::string file = path.empty() ? "<episode>" : std::string(path);
  kernels::KernelRegistry::global();  // registers the kernels' variant knobs
  RECUR_ASSIGN_OR_RETURN(toml::table root, gate::parse_toml(toml_text, file));
  Episode ep;
  ep.path = std::string(path);
  TomlTable top(root, file, "the top level");
  RECUR_ASSIGN_OR_RETURN(gate::DocumentTitle title, gate::read_title(top, file));
  ep.name = title.name;
  // The name is the default run's prefix, and runs are folders: it must be a safe run name.
  RECUR_RETURN_IF_ERROR(check_run_name(ep.name, fmt::format("{}: name", file)));
  ep.description = title.description;
  RECUR_ASSIGN_OR_RETURN(auto budget, top.number("budget_s", 1, 86400));
  if (budget) ep.budget_s = *budget;
  RECUR_ASSIGN_OR_RETURN(auto max_experiments, top.integer("max_experiments", 1, 10000));
  if (max_experiments) ep.max_experiments = int(*max_experiments);

  RECUR_ASSIGN_OR_RETURN(auto gate_rel, top.string("gate"));
  if (!gate_rel) return parse_error("{}: missing 'gate' (the path of a gate spec, relative to this file)", file);
  fs::path gate_path(*gate_rel);
  if (gate_path.is_relative() && !path.empty()) gate_path = fs::path(file).parent_path() / gate_path;
  ep.gate_path = gate_path.string();
  auto gate = gate::load_gate_spec(ep.gate_path, registry);
  if (!gate) return unexpected(gate.error().with_context(file + ": gate"));
  ep.gate = std::move(*gate);

  RECUR_ASSIGN_OR_RETURN(auto candidate, top.string("candidate"));
  ep.candidate = candidate ? *candidate : "cand";
  const gate::Arm* arm = ep.gate.find_arm(ep.candidate);
  if (arm == nullptr) {
    std::vector<std::string> names;
    for (const gate::Arm& a : ep.gate.arms) names.push_back(a.name);
    return parse_error("{}: candidate '{}' is not an arm of {}; arms: {}", file, ep.candidate, ep.gate_path,
                       fmt::join(names, ", "));
  }
  for (const auto& [k, v] : arm->knobs) ep.start[k] = v;

  RECUR_ASSIGN_OR_RETURN(auto start, top.subtable("start"));
  if (start) {
    std::map<std::string, std::string> knobs;
    RECUR_RETURN_IF_ERROR(read_knob_table(*start, start->table(), "", knobs));
    for (auto& [k, v] : knobs) ep.start[k] = v;
  }
  Config check(registry);
  for (const auto& [k, v] : ep.start) {
    if (Status s = check.set(k, v); !s) return parse_error("{}: [start] {}: {}", file, k, s.error().message());
  }

  RECUR_ASSIGN_OR_RETURN(auto search, top.subtable("search"));
  if (search) {
    RECUR_ASSIGN_OR_RETURN(auto fixed, search->strings("fixed"));
    if (fixed) {
      for (const std::string& k : *fixed) {
        if (registry.find(k) == nullptr)
          return unexpected(search->error_at(*search->find("fixed"), "fixed", fmt::format("unknown knob '{}'", k)));
      }
      ep.fixed = *fixed;
    }
    RECUR_RETURN_IF_ERROR(search->finish());
  }
  RECUR_ASSIGN_OR_RETURN(auto expect, top.subtable("expect"));
  if (expect) {
    RECUR_ASSIGN_OR_RETURN(Expect e, parse_expect(*expect, registry));
    for (const auto& [k, v] : e.verify)
      if (std::find(ep.fixed.begin(), ep.fixed.end(), k) != ep.fixed.end())
        return parse_error("{}: [expect.verify] changes {}, which [search] fixes", file, k);
    ep.expect = std::move(e);
  }
  RECUR_RETURN_IF_ERROR(top.finish());
  return ep;
}

Result<Episode> load_episode(const std::string& path, const KnobRegistry& registry) {
  RECUR_ASSIGN_OR_RETURN(std::string text, gate::read_text_file(path, "the episode"));
  return parse_episode(text, path, registry);
}

gate::GateSpec gate_with_candidate(const Episode& e, const std::map<std::string, std::string>& config) {
  gate::GateSpec spec = e.gate;
  for (gate::Arm& a : spec.arms) {
    if (a.name != e.candidate) continue;
    a.knobs.assign(config.begin(), config.end());
  }
  return spec;
}

}  // namespace recur::agent
