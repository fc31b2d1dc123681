// Loading a trace for the analyses: one file (trace/trace_io.h: Chrome JSON, .json.gz, Kineto,
// Perfetto) or a folder of per-rank files, merged into one table (trace_tools.h: pids moved by
// rank << 22), with its ZoneTree built once. Thread-safe (no shared state).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analyze/zone_tree.h"
#include "core/status.h"
#include "trace/event_table.h"
#include "trace/trace_io.h"

namespace recur::analyze {

struct LoadedTrace {
  std::unique_ptr<trace::EventTable> table;  // owned here: the tree points into it
  std::unique_ptr<ZoneTree> tree;
  size_t files = 0;
  // The reader's recoveries, "FILE: recovered: ..." (trace/trace_tools.h, recovery_notes()):
  // every analysis carries them into its output, so guessed durations never pass as measured.
  std::vector<std::string> notes;
};

// A file, or a folder: every *.json, *.json.gz, *.pftrace, *.perfetto-trace and *.pb in it
// (not recursive), in name order. Errors name the path ("x.json: cannot open: No such file or
// directory", "dir: no trace files (*.json, *.json.gz, *.pftrace) in this folder").
// Only regular files are read; gzip input inflates only up to `limits` (trace_io.h).
Result<LoadedTrace> load_trace(const std::string& path, const trace::ReadLimits& limits = {});

// Builds the tree over an existing table (tests, or a table already in memory).
LoadedTrace loaded_from(trace::EventTable table);

}  // namespace recur::analyze
