#include "journal/run_name.h"

#include <string>

#include <fmt/format.h>

namespace recur::agent {

namespace {

bool run_name_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
}

}  // namespace

Status check_run_name(std::string_view name, std::string_view what) {
  constexpr std::string_view rule = "a run name is 1 to 128 letters, digits, '.', '_' or '-', not starting with '.' or "
                                    "'-' (it names the folder runs/NAME)";
  if (name.empty()) return invalid_argument("{}: the run name is empty; {}", what, rule);
  if (name.size() > kMaxRunNameLength)
    return invalid_argument("{}: the run name is {} characters long; {}", what, name.size(), rule);
  for (size_t i = 0; i < name.size(); ++i)
    if (!run_name_char(name[i])) {
      const unsigned char c = static_cast<unsigned char>(name[i]);
      const std::string shown = c >= 0x20 && c < 0x7f ? fmt::format("'{}'", char(c)) : fmt::format("byte 0x{:02x}", c);
      return invalid_argument("{}: character {} ({}) is not allowed; {}", what, i + 1, shown, rule);
    }
  if (name.front() == '.' || name.front() == '-')
    return invalid_argument("{}: '{}' may not start with '{}'; {}", what, name, name.front(), rule);
  return ok_status();
}

}  // namespace recur::agent
