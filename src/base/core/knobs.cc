#include "core/knobs.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace recur {
namespace {

bool parse_int(std::string_view s, int64_t& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

bool parse_double(std::string_view s, double& out) {
  if (s.empty()) return false;
  std::string copy(s);
  char* end = nullptr;
  out = std::strtod(copy.c_str(), &end);
  return end == copy.c_str() + copy.size();
}

bool parse_bool(std::string_view s, bool& out) {
  if (s == "true" || s == "1" || s == "on") return out = true, true;
  if (s == "false" || s == "0" || s == "off") return out = false, true;
  return false;
}

// "engine.kv_dtype.layer[3]" -> "engine.kv_dtype.layer[]"; other names unchanged.
std::string family_of(std::string_view name) {
  if (name.empty() || name.back() != ']') return std::string(name);
  size_t open = name.rfind('[');
  if (open == std::string_view::npos) return std::string(name);
  std::string_view index = name.substr(open + 1, name.size() - open - 2);
  int64_t i;
  if (!parse_int(index, i) || i < 0) return std::string(name);
  return std::string(name.substr(0, open)) + "[]";
}

}  // namespace

std::string_view knob_type_name(KnobType t) {
  switch (t) {
    case KnobType::kBool: return "bool";
    case KnobType::kInt: return "int";
    case KnobType::kFloat: return "float";
    case KnobType::kEnum: return "enum";
    case KnobType::kString: return "string";
  }
  return "?";
}

std::vector<KnobActs> knob_act_places() {
  return {KnobActs::kEngineLoad, KnobActs::kEngine,  KnobActs::kServe,   KnobActs::kTransfer,
          KnobActs::kPython,     KnobActs::kKernelProbe, KnobActs::kProcess, KnobActs::kNowhere};
}

std::string_view knob_act_name(KnobActs one_place) {
  switch (one_place) {
    case KnobActs::kNone: return "undeclared";
    case KnobActs::kEngineLoad: return "engine_load";
    case KnobActs::kEngine: return "engine";
    case KnobActs::kServe: return "serve";
    case KnobActs::kTransfer: return "transfer";
    case KnobActs::kPython: return "python";
    case KnobActs::kKernelProbe: return "kernel_probe";
    case KnobActs::kProcess: return "process";
    case KnobActs::kNowhere: return "nowhere";
  }
  return "?";
}

std::vector<std::string> knob_act_names(KnobActs set) {
  std::vector<std::string> out;
  for (KnobActs p : knob_act_places())
    if (acts_in(set, p)) out.emplace_back(knob_act_name(p));
  if (out.empty()) out.emplace_back(knob_act_name(KnobActs::kNone));
  return out;
}

Status KnobSpec::check(std::string_view value) const {
  switch (type) {
    case KnobType::kBool: {
      bool b;
      if (!parse_bool(value, b)) return invalid_argument("knob {}: '{}' is not a bool (true/false, on/off, 1/0)", name, value);
      return ok_status();
    }
    case KnobType::kInt: {
      int64_t i;
      if (!parse_int(value, i)) return invalid_argument("knob {}: '{}' is not an integer", name, value);
      if (double(i) < min || double(i) > max) return invalid_argument("knob {}: {} is outside [{}, {}]", name, i, min, max);
      return ok_status();
    }
    case KnobType::kFloat: {
      double d;
      if (!parse_double(value, d)) return invalid_argument("knob {}: '{}' is not a number", name, value);
      if (d < min || d > max) return invalid_argument("knob {}: {} is outside [{}, {}]", name, d, min, max);
      return ok_status();
    }
    case KnobType::kEnum:
      for (const auto& c : choices)
        if (c == value) return ok_status();
      return invalid_argument("knob {}: '{}' is not one of {}", name, value, fmt::join(choices, ", "));
    case KnobType::kString:
      return ok_status();
  }
  return ok_status();
}

KnobRegistry& KnobRegistry::global() {
  static KnobRegistry registry;
  return registry;
}

Status KnobRegistry::add(KnobSpec spec) {
  if (spec.name.empty()) return invalid_argument("knob with an empty name");
  if (specs_.count(spec.name)) return invalid_argument("knob {} registered twice", spec.name);
  if (spec.type == KnobType::kEnum && spec.choices.empty()) return invalid_argument("knob {}: enum without choices", spec.name);
  if (acts_in(spec.acts, KnobActs::kNowhere) && spec.acts != KnobActs::kNowhere)
    return invalid_argument("knob {}: declared to act nowhere and somewhere ({})", spec.name,
                            fmt::join(knob_act_names(spec.acts), ", "));
  if (auto s = spec.check(spec.default_value); !s)
    return invalid_argument("knob {}: default '{}' is invalid: {}", spec.name, spec.default_value, s.error().message());
  std::string key = spec.name;
  specs_.emplace(std::move(key), std::move(spec));
  return ok_status();
}

Status KnobRegistry::add_choice(std::string_view name, std::string choice) {
  auto it = specs_.find(name);
  if (it == specs_.end()) return not_found("knob {} is not registered", name);
  if (it->second.type != KnobType::kEnum) return invalid_argument("knob {} is not an enum", name);
  auto& choices = it->second.choices;
  if (std::find(choices.begin(), choices.end(), choice) == choices.end()) choices.push_back(std::move(choice));
  return ok_status();
}

const KnobSpec* KnobRegistry::find(std::string_view name) const {
  if (auto it = specs_.find(name); it != specs_.end()) return &it->second;
  if (auto it = specs_.find(family_of(name)); it != specs_.end()) return &it->second;
  return nullptr;
}

std::vector<const KnobSpec*> KnobRegistry::all() const {
  std::vector<const KnobSpec*> out;
  for (const auto& [name, spec] : specs_) out.push_back(&spec);
  return out;
}

std::vector<const KnobSpec*> KnobRegistry::acting_in(KnobActs where) const {
  std::vector<const KnobSpec*> out;
  for (const auto& [name, spec] : specs_)
    if (acts_in(spec.acts, where)) out.push_back(&spec);
  return out;
}

bool register_knob(KnobSpec spec) {
  std::string name = spec.name;
  if (auto s = KnobRegistry::global().add(std::move(spec)); !s) {
    std::fprintf(stderr, "recur: bad knob registration %s: %s\n", name.c_str(), s.error().message().c_str());
    std::abort();
  }
  return true;
}

Status Config::set(std::string_view name, std::string_view value) {
  const KnobSpec* spec = registry_->find(name);
  if (spec == nullptr) return invalid_argument("unknown knob '{}' (recur knobs lists them)", name);
  if (name.ends_with("[]")) return invalid_argument("knob '{}' needs an index, e.g. {}0]", name, name.substr(0, name.size() - 1));
  RECUR_RETURN_IF_ERROR(spec->check(value));
  values_[std::string(name)] = std::string(value);
  return ok_status();
}

Status Config::set_assignment(std::string_view assignment) {
  size_t eq = assignment.find('=');
  if (eq == std::string_view::npos || eq == 0)
    return invalid_argument("'{}' is not name=value", assignment);
  return set(assignment.substr(0, eq), assignment.substr(eq + 1));
}

void KnobReads::record(std::string_view name) {
  // By content, not address: names formatted in a loop ("...layer[3]") reuse one buffer.
  const uint64_t key = std::hash<std::string_view>{}(name) | 1;  // 0 marks an empty slot
  std::atomic<uint64_t>& slot = seen_[key % kSeen];
  if (slot.load(std::memory_order_relaxed) == key) return;
  std::lock_guard lock(mu_);
  if (names_.find(name) == names_.end()) names_.emplace(name);
  slot.store(key, std::memory_order_relaxed);
}

std::vector<std::string> KnobReads::names() const {
  std::lock_guard lock(mu_);
  return {names_.begin(), names_.end()};
}

std::shared_ptr<const KnobReads> Config::track_reads() {
  reads_ = std::make_shared<KnobReads>();
  return reads_;
}

Result<std::string> Config::get(std::string_view name) const {
  const KnobSpec* spec = registry_->find(name);
  if (spec == nullptr) return not_found("unknown knob '{}'", name);
  if (reads_) reads_->record(name);
  if (auto it = values_.find(name); it != values_.end()) return it->second;
  return spec->default_value;
}

Result<int64_t> Config::get_int(std::string_view name) const {
  RECUR_ASSIGN_OR_RETURN(std::string v, get(name));
  int64_t i;
  if (!parse_int(v, i)) return invalid_argument("knob {}: '{}' is not an integer", name, v);
  return i;
}

Result<double> Config::get_float(std::string_view name) const {
  RECUR_ASSIGN_OR_RETURN(std::string v, get(name));
  double d;
  if (!parse_double(v, d)) return invalid_argument("knob {}: '{}' is not a number", name, v);
  return d;
}

Result<bool> Config::get_bool(std::string_view name) const {
  RECUR_ASSIGN_OR_RETURN(std::string v, get(name));
  bool b;
  if (!parse_bool(v, b)) return invalid_argument("knob {}: '{}' is not a bool", name, v);
  return b;
}

}  // namespace recur
