// One name table per enum: the enum's values and their spellings, from which a knob's choices,
// the parser and the printer are all derived, so each name is written once.
//
//   enum class Mode : uint8_t { kOff, kOn };
//   inline constexpr std::array kModeNames{EnumName<Mode>{Mode::kOff, "off"}, EnumName<Mode>{Mode::kOn, "on"}};
//   RECUR_KNOB(mode, {.name = "x.mode", .type = KnobType::kEnum, .choices = enum_choices(kModeNames), ...});
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace recur {

template <class E>
struct EnumName {
  E value;
  std::string_view name;
};

template <class E, size_t N>
std::vector<std::string> enum_choices(const std::array<EnumName<E>, N>& names) {
  std::vector<std::string> out;
  for (const EnumName<E>& n : names) out.emplace_back(n.name);
  return out;
}

template <class E, size_t N>
constexpr std::optional<E> enum_from_name(const std::array<EnumName<E>, N>& names, std::string_view name) {
  for (const EnumName<E>& n : names)
    if (n.name == name) return n.value;
  return std::nullopt;
}

template <class E, size_t N>
constexpr std::string_view enum_name(const std::array<EnumName<E>, N>& names, E value) {
  for (const EnumName<E>& n : names)
    if (n.value == value) return n.name;
  return "?";
}

}  // namespace recur
