// Where a run's artifacts go: beside its journal, in a folder named after the run
// (runs/<run>/{traces,callgrind,patches}), so the report links them with relative paths.
// Plain data; thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include <fmt/format.h>

namespace recur::agent {

struct RunPaths {
  std::filesystem::path root;  // <journal's folder>/<run name>

  static RunPaths of(std::string_view journal, std::string_view run) {
    return {std::filesystem::path(journal).parent_path() / run};
  }
  // Traces the gate and the timeline probes record.
  std::string trace_dir() const { return (root / "traces").string(); }
  // Instruction-count dumps of bench.callgrind.
  std::string callgrind_dir() const { return (root / "callgrind").string(); }
  // A proposer's patch, written before it is built as a candidate.
  std::string patch_file(int64_t step) const { return (root / "patches" / fmt::format("step-{}.patch", step)).string(); }
};

}  // namespace recur::agent
