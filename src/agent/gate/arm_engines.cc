#include "gate/arm_engines.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace recur::gate {

std::string engine_load_key(const Config& config, const KnobRegistry& registry) {
  std::vector<std::string> parts;
  for (const KnobSpec* k : registry.acting_in(KnobActs::kEngineLoad)) {
    if (k->name.ends_with("[]")) {  // an indexed family: the members the config sets
      const std::string_view stem = std::string_view(k->name).substr(0, k->name.size() - 1);
      for (const auto& [name, value] : config.overrides())
        if (name.starts_with(stem) && value != k->default_value) parts.push_back(fmt::format("{}={}", name, value));
      continue;
    }
    Result<std::string> value = config.get(k->name);
    if (value && *value != k->default_value) parts.push_back(fmt::format("{}={}", k->name, *value));
  }
  std::sort(parts.begin(), parts.end());
  return parts.empty() ? "defaults" : fmt::format("{}", fmt::join(parts, " "));
}

Result<ArmEngine> ArmEngines::get(const Config& config) {
  const std::string key = engine_load_key(config, *registry_);
  auto it = instances_.find(key);
  if (it == instances_.end()) {
    Instance in;
    RECUR_ASSIGN_OR_RETURN(FileMemory memory, weights_file_memory(config));
    std::shared_ptr<const MappedFile>& bytes = bytes_[memory];
    if (!bytes) {
      RECUR_ASSIGN_OR_RETURN(bytes, read_model_bytes(path_, config));
    }
    in.bytes = bytes;
    auto model = load_model_over(*in.bytes, config);
    if (!model) return unexpected(model.error().with_context(fmt::format("loading {} ({})", path_, key)));
    in.model = std::move(*model);
    RECUR_ASSIGN_OR_RETURN(in.pool_options, engine_pool_options(config, threads_));
    RECUR_ASSIGN_OR_RETURN(in.pool, ThreadPool::create(in.pool_options));
    it = instances_.emplace(key, std::move(in)).first;
  }
  return ArmEngine{it->second.model.get(), it->second.pool.get(), &it->second.pool_options, key};
}

std::vector<std::string> ArmEngines::load_keys() const {
  std::vector<std::string> keys;
  for (const auto& [key, in] : instances_) keys.push_back(key);
  return keys;
}

std::vector<std::string> ArmEngines::conditions_notes() const {
  std::vector<std::string> notes;
  for (const auto& [key, in] : instances_) {
    std::string note = probe_conditions_note(*in.pool, in.pool_options);
    if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(std::move(note));
  }
  return notes;
}

}  // namespace recur::gate
