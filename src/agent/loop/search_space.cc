#include "loop/search_space.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "kernels/registry.h"

namespace recur::agent {

namespace {

// "kernel.<k>.variant" -> the kernel, or null.
const kernels::KernelSpec* variant_kernel(std::string_view knob) {
  constexpr std::string_view prefix = "kernel.", suffix = ".variant";
  if (!knob.starts_with(prefix) || !knob.ends_with(suffix) || knob.size() <= prefix.size() + suffix.size()) return nullptr;
  return kernels::KernelRegistry::global().find(knob.substr(prefix.size(), knob.size() - prefix.size() - suffix.size()));
}

// The parameter in which two variants differ, when they differ in exactly one ("" otherwise).
std::string single_difference(const kernels::VariantSpec& a, const kernels::VariantSpec& b) {
  if (a.params.size() != b.params.size()) return "";
  std::string differs;
  for (const auto& [k, v] : a.params) {
    auto it = b.params.find(k);
    if (it == b.params.end()) return "";
    if (it->second == v) continue;
    if (!differs.empty()) return "";
    differs = k;
  }
  return differs;
}

void variant_candidates(const kernels::KernelSpec& kernel, const KnobSpec& knob, const std::string& current,
                        std::vector<Candidate>& out) {
  const kernels::VariantSpec* from = kernel.find_variant(current);
  for (const kernels::VariantSpec& v : kernel.variants) {
    if (v.name == current || !kernels::check_runnable(v)) continue;
    if (from == nullptr || from->params.empty()) {
      out.push_back({knob.name, v.name, current, "", fmt::format("variant of {}", kernel.name)});
      continue;
    }
    const std::string p = single_difference(*from, v);
    if (p.empty()) continue;
    out.push_back({knob.name, v.name, current, "",
                   fmt::format("variant neighbour: {} {} -> {}", p, from->params.at(p), v.params.at(p))});
  }
}

void value_candidates(const KnobSpec& knob, const std::string& current, std::vector<Candidate>& out) {
  switch (knob.type) {
    case KnobType::kEnum:
      for (const std::string& c : knob.choices)
        if (c != current && c != "auto" && std::ranges::find(knob.test_only, c) == knob.test_only.end() &&
            (knob.available == nullptr || knob.available(c)))
          out.push_back({knob.name, c, current, "", "another choice"});
      break;
    case KnobType::kBool:
      out.push_back({knob.name, current == "true" ? "false" : "true", current, "", "the other setting"});
      break;
    case KnobType::kInt: {
      char* end = nullptr;
      const long long v = std::strtoll(current.c_str(), &end, 10);
      for (long long n : {v * 2, v / 2})
        if (n != v && double(n) >= knob.min && double(n) <= knob.max)
          out.push_back({knob.name, std::to_string(n), current, "", n > v ? "doubled" : "halved"});
      break;
    }
    case KnobType::kFloat:
    case KnobType::kString: break;  // no neighbourhood without a scale
  }
}

}  // namespace

std::vector<Candidate> changes_of(const KnobSpec& knob, const std::string& knob_name, const std::string& current) {
  std::vector<Candidate> out;
  if (const kernels::KernelSpec* kernel = variant_kernel(knob.name)) {
    for (const kernels::VariantSpec& v : kernel->variants)
      if (v.name != current && kernels::check_runnable(v))
        out.push_back({knob_name, v.name, current, "", fmt::format("variant of {}", kernel->name)});
    return out;
  }
  value_candidates(knob, current, out);
  for (Candidate& c : out) c.knob = knob_name;
  return out;
}

std::optional<std::pair<std::string, std::string>> kernel_variant_of(const Candidate& c) {
  if (const kernels::KernelSpec* k = variant_kernel(c.knob)) return std::pair(k->name, c.value);
  const KnobSpec* spec = KnobRegistry::global().find(c.knob);
  if (spec == nullptr) return std::nullopt;
  for (const std::string& tag : spec->components) {
    if (!tag.starts_with("kernel:")) continue;
    const kernels::KernelSpec* ks = kernels::KernelRegistry::global().find(tag.substr(7));
    // Both ends must be variants, so a value that only shares a name ("f32") does not count.
    if (ks && ks->find_variant(c.value) && ks->find_variant(c.from)) return std::pair(ks->name, c.value);
  }
  return std::nullopt;
}

std::optional<int> component_layer(std::string_view component) {
  const size_t at = component.rfind("/layer[");
  if (at == std::string_view::npos || !component.ends_with("]")) return std::nullopt;
  const std::string_view digits = component.substr(at + 7, component.size() - at - 8);
  if (digits.empty() || digits.size() > 6) return std::nullopt;
  int l = 0;
  for (char ch : digits) {
    if (ch < '0' || ch > '9') return std::nullopt;
    l = l * 10 + (ch - '0');
  }
  return l;
}

bool component_matches(std::string_view tag, std::string_view component) {
  if (tag == component) return true;
  return component.size() > tag.size() && component.starts_with(tag) && component[tag.size()] == '/';
}

std::string effective_value(const Config& config, const KnobSpec& knob) {
  auto v = config.get(knob.name);
  std::string value = v ? *v : knob.default_value;
  if (value != "auto") return value;
  if (const kernels::KernelSpec* k = variant_kernel(knob.name))
    if (const kernels::VariantSpec* best = k->best_variant()) return best->name;
  return value;
}

std::vector<Candidate> candidates_for(std::string_view component, const Config& current,
                                      const std::set<std::string, std::less<>>& fixed, const KnobRegistry& registry) {
  std::vector<Candidate> out;
  const std::optional<int> layer = component_layer(component);
  for (const KnobSpec* knob : registry.all()) {
    if (fixed.count(knob->name)) continue;
    const bool tagged = std::any_of(knob->components.begin(), knob->components.end(),
                                    [&](const std::string& tag) { return component_matches(tag, component); });
    if (!tagged) continue;
    if (knob->name.ends_with("[]")) {
      // A per-layer knob acts on the component only at the layer the attribution named.
      if (!layer) continue;
      const std::string name = fmt::format("{}{}]", knob->name.substr(0, knob->name.size() - 1), *layer);
      if (fixed.count(name)) continue;
      auto v = current.get(name);
      for (Candidate& c : changes_of(*knob, name, v ? *v : knob->default_value)) {
        c.component = std::string(component);
        c.why = fmt::format("{} at layer {}", c.why, *layer);
        out.push_back(std::move(c));
      }
      continue;
    }
    const std::string value = effective_value(current, *knob);
    const size_t first = out.size();
    if (const kernels::KernelSpec* kernel = variant_kernel(knob->name)) variant_candidates(*kernel, *knob, value, out);
    else value_candidates(*knob, value, out);
    for (size_t i = first; i < out.size(); ++i) out[i].component = std::string(component);
  }
  std::stable_partition(out.begin(), out.end(), [](const Candidate& c) { return kernel_variant_of(c).has_value(); });
  return out;
}

}  // namespace recur::agent
