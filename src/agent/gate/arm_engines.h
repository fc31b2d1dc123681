// The model instance and thread pool each arm of a gate runs on.
//
// Arms that agree on every knob declared to act at load (KnobActs::kEngineLoad in the knob
// registry: engine.weight_layout, engine.weights_memory, engine.pool_spin_us, ...) share one
// instance; an arm that differs in one gets its own, so load-time knobs can differ between arms
// and be the subject of an episode. Instances are loaded over shared file bytes
// (engine/model.h read_model_bytes) when their arms agree on how the bytes are held: only the
// in-memory preparation (a regrouped copy) is per instance.
//
//   ArmEngines engines(path, /*threads=*/2);
//   RECUR_ASSIGN_OR_RETURN(ArmEngine e, engines.get(arm_config));   // e.model, e.pool
//
// The order of the arms' runs is the caller's (interleaving stays the probes' job). Not
// thread-safe.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/knobs.h"
#include "core/mapped_file.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "engine/model.h"

namespace recur::gate {

struct ArmEngine {
  const Model* model = nullptr;
  ThreadPool* pool = nullptr;
  const ThreadPoolOptions* pool_options = nullptr;
  std::string load_key;  // the arm's load-time knob values, "defaults" when it sets none
};

// "engine.weight_layout=rows" (sorted, space-separated) of the load-time knobs `config` sets to
// other than their defaults, or "defaults". Reads them through the config, so a tracked config
// records them: every engine load reads them.
std::string engine_load_key(const Config& config, const KnobRegistry& registry = KnobRegistry::global());

class ArmEngines {
 public:
  ArmEngines(std::string model_path, int threads, const KnobRegistry& registry = KnobRegistry::global())
      : path_(std::move(model_path)), threads_(threads), registry_(&registry) {}

  // The instance for an arm's configuration, loaded on first use.
  Result<ArmEngine> get(const Config& config);

  const std::string& model_path() const { return path_; }
  size_t instances() const { return instances_.size(); }
  size_t byte_copies() const { return bytes_.size(); }
  std::vector<std::string> load_keys() const;  // one per instance, sorted
  // The "probe conditions" note of every instance's pool, once per distinct note.
  std::vector<std::string> conditions_notes() const;

 private:
  struct Instance {
    std::shared_ptr<const MappedFile> bytes;
    std::unique_ptr<Model> model;
    ThreadPoolOptions pool_options;
    std::unique_ptr<ThreadPool> pool;
  };
  std::string path_;
  int threads_;
  const KnobRegistry* registry_;
  std::map<FileMemory, std::shared_ptr<const MappedFile>> bytes_;  // by weights_file_memory
  std::map<std::string, Instance> instances_;                 // by engine_load_key
};

}  // namespace recur::gate
