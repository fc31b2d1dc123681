// Knobs: the action space. Every tunable of the stack is a registered knob with a typed name,
// its allowed values, a default and the components it touches (shared/DESIGN.md).
//
//   RECUR_KNOB(kda_variant, {.name = "kernel.kda_decode.variant", .type = KnobType::kEnum,
//                            .choices = {"vtile", "vtile_recip", "hoisted"}, .default_value = "hoisted",
//                            .components = {"kernel:kda_decode"}, .acts = KnobActs::kKernelProbe,
//                            .help = "decode work split"});
//
// A name ending in "[]" is an indexed family: "engine.kv_dtype.layer[]" accepts
// "engine.kv_dtype.layer[3]". The engine reads knob values from one Config; the CLI fills it
// with --set name=value; the agent's search space is the registry. Registration happens at
// static-initialisation time; lookups afterwards are read-only and thread-safe.
#pragma once

#include <cstdint>
#include <array>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"

namespace recur {

enum class KnobType { kBool, kInt, kFloat, kEnum, kString };
std::string_view knob_type_name(KnobType t);

// Where a knob acts: a set (a knob may act in several places). Every knob declares it; `recur
// knobs` shows it and the knob-efficacy test (gate/knob_efficacy.h) checks the claim.
enum class KnobActs : uint32_t {
  kNone = 0,
  kEngineLoad = 1u << 0,   // read when a model is loaded or the engine's pool created: arms that
                           // differ in it get their own model instance (gate/arm_engines.h)
  kEngine = 1u << 1,       // read by the engine's forward (sessions, batches)
  kServe = 1u << 2,        // the server and its prefill/decode workers
  kTransfer = 1u << 3,     // the KV transfer engine
  kPython = 1u << 4,       // the Python bindings
  kKernelProbe = 1u << 5,  // the kernel probes (check.kernel, bench.kernel) only
  kProcess = 1u << 6,      // read once at process start-up: all arms of one gate share its value
  kNowhere = 1u << 7,      // declared read by no code today (a name kept for episodes' decoys)
};
constexpr KnobActs operator|(KnobActs a, KnobActs b) { return KnobActs(uint32_t(a) | uint32_t(b)); }
constexpr bool acts_in(KnobActs set, KnobActs where) { return (uint32_t(set) & uint32_t(where)) != 0; }
// Every single place, in declaration order, and their names ("engine_load", "engine", ...).
std::vector<KnobActs> knob_act_places();
std::string_view knob_act_name(KnobActs one_place);
std::vector<std::string> knob_act_names(KnobActs set);

struct KnobSpec {
  std::string name;
  KnobType type = KnobType::kString;
  std::vector<std::string> choices;  // kEnum
  double min = -1e300, max = 1e300;  // kInt, kFloat (inclusive)
  std::string default_value;
  std::vector<std::string> components;  // "kernel:kda_decode", "lock:gil", "thread:kv_transfer"
  KnobActs acts = KnobActs::kNone;       // where it acts; kNone: undeclared (the efficacy test fails)
  std::string help;
  // kEnum choices that exist for tests and checks (an emulator: the same bits, far slower): they
  // run when set, but the agent never proposes them as a tuning step.
  std::vector<std::string> test_only;
  // kEnum: whether a choice can run on this machine (null: every choice can). A choice it
  // rejects still parses (and is refused by name where it is read), but is never proposed.
  bool (*available)(std::string_view choice) = nullptr;

  // Checks `value` against the type, choices and range; errors say what was expected.
  Status check(std::string_view value) const;
};

class KnobRegistry {
 public:
  static KnobRegistry& global();
  // Fails on a duplicate name or a default that does not pass its own check.
  Status add(KnobSpec spec);
  // Adds a choice to an enum knob (a kernel variant registered after start-up); call it before
  // other threads read the registry.
  Status add_choice(std::string_view name, std::string choice);
  // Exact name, or the "[]" family an indexed name belongs to.
  const KnobSpec* find(std::string_view name) const;
  std::vector<const KnobSpec*> all() const;  // sorted by name
  // The knobs that act where `where` says (any of its places), sorted by name.
  std::vector<const KnobSpec*> acting_in(KnobActs where) const;

 private:
  std::map<std::string, KnobSpec, std::less<>> specs_;
};

// Registers at static-initialisation time; a bad spec is a programming error and aborts.
bool register_knob(KnobSpec spec);
#define RECUR_KNOB(id, ...) static const bool recur_knob_##id = ::recur::register_knob(KnobSpec __VA_ARGS__)

// The knobs read through a Config (and its copies) since track_reads(): what a workload really
// reads under that configuration (the agent probes only those; docs/agent.md, "Only live
// knobs"). Knobs applied outside a Config (core.isa at start-up) or in another process (a
// program workload) are not seen. Thread-safe.
class KnobReads {
 public:
  void record(std::string_view name);
  std::vector<std::string> names() const;  // sorted; indexed knobs with their index

 private:
  // Hot paths read the same names again and again: a name already recorded is found by its hash
  // without the lock, so a tracked configuration times like any other.
  static constexpr size_t kSeen = 64;
  std::array<std::atomic<uint64_t>, kSeen> seen_{};
  mutable std::mutex mu_;
  std::set<std::string, std::less<>> names_;
};

// Knob values chosen for one run. Unset knobs read as their default.
class Config {
 public:
  explicit Config(const KnobRegistry& registry = KnobRegistry::global()) : registry_(&registry) {}

  Status set(std::string_view name, std::string_view value);
  // "name=value", as --set takes it.
  Status set_assignment(std::string_view assignment);

  Result<std::string> get(std::string_view name) const;
  Result<int64_t> get_int(std::string_view name) const;
  Result<double> get_float(std::string_view name) const;
  Result<bool> get_bool(std::string_view name) const;
  // Values that differ from their defaults, sorted by name: the "config diff" of an experiment.
  const std::map<std::string, std::string, std::less<>>& overrides() const { return values_; }
  // From now on every get() of this Config or of a copy made later is recorded in the result.
  std::shared_ptr<const KnobReads> track_reads();

 private:
  const KnobRegistry* registry_;
  std::shared_ptr<KnobReads> reads_;
  std::map<std::string, std::string, std::less<>> values_;
};

}  // namespace recur
