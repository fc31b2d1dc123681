#include "loop/component_knobs.h"

#include <algorithm>

#include <fmt/format.h>

#include "loop/search_space.h"

namespace recur::agent {

std::vector<const KnobSpec*> knobs_for_component(std::string_view component, const KnobRegistry& registry) {
  std::vector<const KnobSpec*> out;
  for (const KnobSpec* k : registry.all())
    if (std::any_of(k->components.begin(), k->components.end(),
                    [&](const std::string& tag) { return component_matches(tag, component); }))
      out.push_back(k);
  return out;
}

bool declared_without_knobs(std::string_view component) {
  const size_t slash = component.find('/');
  const std::string_view whole = component.substr(0, slash);
  return std::find(std::begin(kComponentsWithoutKnobs), std::end(kComponentsWithoutKnobs), whole) !=
         std::end(kComponentsWithoutKnobs);
}

std::vector<std::string> knobless_components(const Evidence& ev) {
  std::vector<std::string> out;
  for (const Attribution& a : ev.components)
    if (knobs_for_component(a.component).empty())
      out.push_back(fmt::format("{} ({:.0f}%)", a.component, 100 * a.share));
  return out;
}

std::string patch_request(const Evidence& ev) {
  if (ev.components.empty() || !knobs_for_component(ev.components.front().component).empty()) return "";
  const Attribution& top = ev.components.front();
  return fmt::format("the largest part of `{}` is {} ({:.0f}%: {}), which no knob acts on: a code change is needed "
                     "there; propose a patch (action \"patch\") that makes it cheaper",
                     ev.condition, top.component, 100 * top.share, top.evidence);
}

}  // namespace recur::agent
