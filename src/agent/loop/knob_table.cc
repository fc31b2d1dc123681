#include "loop/knob_table.h"

#include <fmt/format.h>

namespace recur::agent {

Status read_knob_table(const gate::TomlTable& t, const toml::table& table, const std::string& prefix,
                       std::map<std::string, std::string>& out) {
  for (auto&& [k, v] : table) {
    std::string name = prefix.empty() ? std::string(k.str()) : prefix + "." + std::string(k.str());
    if (v.is_table()) {
      RECUR_RETURN_IF_ERROR(read_knob_table(t, *v.as_table(), name, out));
      continue;
    }
    if (v.is_string()) out[name] = v.as_string()->get();
    else if (v.is_integer()) out[name] = fmt::format("{}", v.as_integer()->get());
    else if (v.is_floating_point()) out[name] = fmt::format("{}", v.as_floating_point()->get());
    else if (v.is_boolean()) out[name] = v.as_boolean()->get() ? "true" : "false";
    else return unexpected(t.error_at(v, name, "expected a string, number or boolean knob value"));
  }
  return ok_status();
}

}  // namespace recur::agent
