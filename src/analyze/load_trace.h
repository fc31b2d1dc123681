// Loading a trace for the analyses: one file (trace/trace_io.h: Chrome JSON, .json.gz, Kineto,
// Perfetto) or a folder of per-rank files, merged into one table (trace_tools.h: pids moved by
// rank << 22), with its ZoneTree built once. Thread-safe (no shared state).
#pragma once

#include <memory>
#include <string>

#include "analyze/zone_tree.h"
#include "core/status.h"
#include "trace/event_table.h"

namespace recur::analyze {

struct LoadedTrace {
  std::unique_ptr<trace::EventTable> table;  // owned here: the tree points into it
  std::unique_ptr<ZoneTree> tree;
  size_t files = 0;
};

// A file, or a folder: every *.json, *.json.gz, *.pftrace, *.perfetto-trace and *.pb in it
// (not recursive), in name order. Errors name the path ("x.json: cannot open: No such file or
// directory", "dir: no trace files (*.json, *.json.gz, *.pftrace) in this folder").
Result<LoadedTrace> load_trace(const std::string& path);

// Builds the tree over an existing table (tests, or a table already in memory).
LoadedTrace loaded_from(trace::EventTable table);

}  // namespace recur::analyze
