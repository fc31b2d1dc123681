// Run names become folders (runs/RUN/callgrind, traces, patches, report.html beside the journal),
// so every way a run is named (an episode's `name`, `agent run --run`, MCP `run`) goes through
// check_run_name: 1..128 of [A-Za-z0-9._-], not starting with '.' or '-'. No '/', no "..", no
// absolute path can leave the journal's folder.
#pragma once

#include <string_view>

#include "core/status.h"

namespace recur::agent {

inline constexpr size_t kMaxRunNameLength = 128;

// kInvalidArgument naming `what` (e.g. "--run", "episode.toml: name"), the value and the rule.
Status check_run_name(std::string_view name, std::string_view what);

}  // namespace recur::agent
