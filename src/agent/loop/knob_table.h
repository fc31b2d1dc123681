// Knob assignments read from a TOML table ([start] of an episode, [expect.verify]): nested
// tables flatten to dotted names (`engine.tp = 4`), values become text. Thread-safe.
#pragma once

#include <map>
#include <string>

#include "core/status.h"
#include "gate/toml_reader.h"

namespace recur::agent {

Status read_knob_table(const gate::TomlTable& t, const toml::table& table, const std::string& prefix,
                       std::map<std::string, std::string>& out);

}  // namespace recur::agent
