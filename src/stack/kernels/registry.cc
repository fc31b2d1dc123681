#include "kernels/registry.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/knobs.h"

namespace recur::kernels {
namespace {

std::string param_list(std::span<const ShapeParam> params) {
  std::vector<std::string> names;
  for (const ShapeParam& p : params) names.push_back(fmt::format("{} (default {})", p.name, p.default_value));
  return fmt::format("{}", fmt::join(names, ", "));
}

std::string strip_spaces(std::string_view s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

}  // namespace

std::optional<int64_t> Shape::find(std::string_view name) const {
  for (const auto& [n, v] : params_)
    if (n == name) return v;
  return std::nullopt;
}

int64_t Shape::operator[](std::string_view name) const {
  auto v = find(name);
  if (!v) {
    std::fprintf(stderr, "recur: shape %s has no parameter '%.*s'\n", to_string().c_str(), int(name.size()), name.data());
    std::abort();
  }
  return *v;
}

void Shape::set(std::string_view name, int64_t value) {
  for (auto& [n, v] : params_)
    if (n == name) {
      v = value;
      return;
    }
  params_.emplace_back(std::string(name), value);
}

std::string Shape::to_string() const {
  std::vector<std::string> items;
  for (const auto& [n, v] : params_) items.push_back(fmt::format("{}{}", n, v));
  return fmt::format("{}", fmt::join(items, ","));
}

Result<Shape> parse_shape(std::string_view text, std::span<const ShapeParam> params) {
  std::vector<std::pair<std::string, int64_t>> values;
  for (const ShapeParam& p : params) values.emplace_back(p.name, p.default_value);
  std::vector<bool> seen(params.size(), false);
  std::string s = strip_spaces(text);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t end = s.find(',', pos);
    if (end == std::string::npos) end = s.size();
    std::string item = s.substr(pos, end - pos);
    if (item.empty()) return invalid_argument("shape '{}': empty item at byte {}", text, pos);
    size_t i = 0;
    while (i < item.size() && (std::isalpha(static_cast<unsigned char>(item[i])) || item[i] == '_')) ++i;
    std::string name = item.substr(0, i);
    if (name.empty())
      return invalid_argument("shape '{}': item '{}' should start with a parameter name; parameters: {}", text, item,
                              param_list(params));
    if (i < item.size() && item[i] == '=') ++i;
    std::string digits = item.substr(i);
    if (digits.empty() || !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }) ||
        digits.size() > 15)
      return invalid_argument("shape '{}': item '{}': expected {}<positive integer>", text, item, name);
    auto it = std::find_if(params.begin(), params.end(), [&](const ShapeParam& p) { return p.name == name; });
    if (it == params.end())
      return invalid_argument("shape '{}': unknown parameter '{}'; parameters: {}", text, name, param_list(params));
    size_t idx = size_t(it - params.begin());
    if (seen[idx]) return invalid_argument("shape '{}': parameter '{}' given twice", text, name);
    seen[idx] = true;
    values[idx].second = std::stoll(digits);
    pos = end + 1;
    if (end == s.size() - 1) return invalid_argument("shape '{}': trailing ','", text);
  }
  return Shape(std::move(values));
}

const VariantSpec* KernelSpec::find_variant(std::string_view n) const {
  for (const VariantSpec& v : variants)
    if (v.name == n) return &v;
  return nullptr;
}

Result<const VariantSpec*> KernelSpec::lookup_variant(std::string_view n) const {
  if (const VariantSpec* v = find_variant(n)) return v;
  std::vector<std::string> names;
  for (const VariantSpec& v : variants) names.push_back(v.name);
  return not_found("kernel {}: no variant '{}'; variants: {}", name, n, fmt::join(names, ", "));
}

const VariantSpec* KernelSpec::best_variant() const {
  const VariantSpec* best = nullptr;
  for (const VariantSpec& v : variants)
    if (v.isa <= active_isa() && (best == nullptr || v.isa > best->isa)) best = &v;
  return best;
}

Status KernelSpec::validate_shape(const Shape& shape) const {
  for (const ShapeParam& p : shape_params) {
    auto v = shape.find(p.name);
    if (!v) return invalid_argument("kernel {}: shape {} lacks parameter {}", name, shape.to_string(), p.name);
    if (*v < p.min || *v > p.max)
      return invalid_argument("kernel {}: shape {}: {}={} is outside [{}, {}]", name, shape.to_string(), p.name, *v, p.min,
                              p.max);
  }
  if (check_shape) {
    if (auto s = check_shape(shape); !s) return unexpected(s.error().with_context(fmt::format("kernel {}", name)));
  }
  return ok_status();
}

Result<Shape> KernelSpec::parse_shape(std::string_view text) const {
  RECUR_ASSIGN_OR_RETURN(Shape shape, kernels::parse_shape(text, shape_params));
  RECUR_RETURN_IF_ERROR(validate_shape(shape));
  return shape;
}

Shape KernelSpec::default_shape() const {
  std::vector<std::pair<std::string, int64_t>> values;
  for (const ShapeParam& p : shape_params) values.emplace_back(p.name, p.default_value);
  return Shape(std::move(values));
}

std::string KernelSpec::describe_tensors(const Shape& shape) const {
  std::vector<std::string> items;
  for (const auto* group : {&inputs, &outputs})
    for (const TensorSpec& t : *group) items.push_back(fmt::format("{} {}[{}]", t.name, dtype_name(t.dtype), fmt::join(t.dims(shape), ",")));
  return fmt::format("{}", fmt::join(items, "; "));
}

void must(const Status& s, std::string_view what) {
  if (s) return;
  std::fprintf(stderr, "recur: %.*s: %s\n", int(what.size()), what.data(), s.error().to_string().c_str());
  std::abort();
}

Status check_runnable(const VariantSpec& v) {
  if (v.isa <= active_isa()) return ok_status();
  return unsupported("variant {} needs {}; this machine (or the --isa cap) runs up to {}", v.name, isa_name(v.isa),
                     isa_name(active_isa()));
}

std::pair<int64_t, int64_t> shard_range(int64_t extent, int shards, int p) {
  return {extent * p / shards, extent * (p + 1) / shards};
}

namespace {

// A kernel's variant is a knob, kernel.<name>.variant ("auto" = best runnable), tagged with the
// kernel's component, so every registered variant is in the agent's search space. It acts on the
// kernel probes and, for a kernel whose spec sets engine_calls, on the engine too (engine/engine_kernels.h). A knob
// registry that already has it (a second kernel registry in a test) keeps its own.
void register_variant_knob(const KernelSpec& spec) {
  const std::string knob = fmt::format("kernel.{}.variant", spec.name);
  if (KnobRegistry::global().find(knob) != nullptr) return;
  std::vector<std::string> choices = {"auto"};
  for (const VariantSpec& v : spec.variants) choices.push_back(v.name);
  (void)KnobRegistry::global().add({.name = knob, .type = KnobType::kEnum, .choices = choices, .default_value = "auto",
                                    .components = {"kernel:" + spec.name}, .acts = spec.engine_calls ? KnobActs::kEngine | KnobActs::kKernelProbe
                                                              : KnobActs::kKernelProbe,
                                    .help = "variant of kernel " + spec.name + " (auto: best for the ISA)" +
                                            (spec.engine_note.empty() ? "" : "; " + spec.engine_note)});
}

}  // namespace

Status KernelRegistry::add(KernelSpec spec) {
  if (spec.name.empty()) return invalid_argument("kernel registry: a kernel needs a name");
  if (specs_.count(spec.name)) return invalid_argument("kernel registry: '{}' is registered twice", spec.name);
  if (!spec.reference) return invalid_argument("kernel {}: no float64 reference", spec.name);
  if (spec.variants.empty()) return invalid_argument("kernel {}: no variants", spec.name);
  if (spec.outputs.empty()) return invalid_argument("kernel {}: no outputs", spec.name);
  if (!spec.cost.bytes || !spec.cost.flops) return invalid_argument("kernel {}: no cost model", spec.name);
  Shape def = spec.default_shape();
  for (const auto* group : {&spec.inputs, &spec.outputs})
    for (const TensorSpec& t : *group) {
      size_t rank = t.dims(def).size();
      if (t.coords.size() != rank)
        return invalid_argument("kernel {}: tensor {} has {} dims but {} coordinate names", spec.name, t.name, rank,
                                t.coords.size());
      if (!t.tile.empty() && t.tile.size() != rank)
        return invalid_argument("kernel {}: tensor {} has {} dims but {} tile sizes", spec.name, t.name, rank, t.tile.size());
      if (t.partition_dim >= int(rank)) return invalid_argument("kernel {}: tensor {}: bad partition_dim", spec.name, t.name);
    }
  if (spec.partitioning) {
    auto it = std::find_if(spec.shape_params.begin(), spec.shape_params.end(),
                           [&](const ShapeParam& p) { return p.name == spec.partitioning->param; });
    if (it == spec.shape_params.end())
      return invalid_argument("kernel {}: partitioning parameter '{}' is not a shape parameter", spec.name,
                              spec.partitioning->param);
  }
  for (size_t i = 0; i < spec.variants.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (spec.variants[i].name == spec.variants[j].name)
        return invalid_argument("kernel {}: variant '{}' is registered twice", spec.name, spec.variants[i].name);
  register_variant_knob(spec);
  std::string name = spec.name;
  specs_.emplace(name, std::move(spec));
  return ok_status();
}

Status KernelRegistry::add_variant(std::string_view kernel, VariantSpec variant) {
  auto it = specs_.find(kernel);
  if (it == specs_.end()) return unexpected(lookup(kernel).error());
  if (it->second.find_variant(variant.name))
    return invalid_argument("kernel {}: variant '{}' is registered twice", kernel, variant.name);
  // The variant knob offers it too, so configurations (and the agent) can select it.
  const std::string knob = fmt::format("kernel.{}.variant", kernel);
  if (KnobRegistry::global().find(knob) != nullptr) RECUR_RETURN_IF_ERROR(KnobRegistry::global().add_choice(knob, variant.name));
  it->second.variants.push_back(std::move(variant));
  return ok_status();
}

const KernelSpec* KernelRegistry::find(std::string_view name) const {
  auto it = specs_.find(name);
  return it == specs_.end() ? nullptr : &it->second;
}

Result<const KernelSpec*> KernelRegistry::lookup(std::string_view name) const {
  if (const KernelSpec* k = find(name)) return k;
  std::vector<std::string> names;
  for (const auto& [n, spec] : specs_) names.push_back(n);
  return not_found("no kernel '{}'; kernels: {}", name, fmt::join(names, ", "));
}

std::vector<const KernelSpec*> KernelRegistry::all() const {
  std::vector<const KernelSpec*> out;
  for (const auto& [n, spec] : specs_) out.push_back(&spec);
  return out;
}

KernelRegistry& KernelRegistry::global() {
  static KernelRegistry* registry = [] {
    auto* r = new KernelRegistry;
    for (KernelSpec& spec : builtin_kernel_specs()) {
      if (auto s = r->add(std::move(spec)); !s) {
        std::fprintf(stderr, "recur: built-in kernel: %s\n", s.error().to_string().c_str());
        std::abort();
      }
    }
    return r;
  }();
  return *registry;
}

// The CLI lists knobs at start-up; registering kernels statically makes their variant knobs visible.
static const bool recur_builtin_kernels_registered = (KernelRegistry::global(), true);

}  // namespace recur::kernels
