// Shared by the verbs that read traces (`recur trace ...`, `recur analyze ...`): the
// --max-trace-bytes option (trace/trace_io.h, ReadLimits) and the reader's recovery notes on
// stderr for verbs whose output has no place for them. Header-only: the CLI builds only
// *_command.cc files.
#pragma once

#include <cstdio>
#include <string_view>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "trace/event_table.h"
#include "trace/trace_io.h"
#include "trace/trace_tools.h"

namespace recur::cli {

// --max-trace-bytes SIZE: the most a gzip trace may inflate to ("8GiB", "500MB" or bytes).
inline void add_max_trace_bytes_option(CLI::App* cmd, trace::ReadLimits& limits) {
  cmd->add_option("--max-trace-bytes", limits.max_trace_bytes,
                  fmt::format("most uncompressed bytes a .gz trace may inflate to, e.g. 8GiB (default: 100x the "
                              "compressed size, at least {} MiB, at most {} GiB; a guard against gzip bombs)",
                              trace::kMinDefaultInflateLimit >> 20, trace::kMaxDefaultInflateLimit >> 30))
      ->transform(CLI::AsSizeValue(false))
      ->check(CLI::PositiveNumber);
}

// "recur: warning: PATH: recovered: ..." per recovery the reader made.
inline void warn_recovery_notes(std::string_view path, const trace::TraceInfo& info) {
  for (const std::string& note : trace::recovery_notes(info)) {
    std::fprintf(stderr, "recur: warning: %.*s: %s\n", int(path.size()), path.data(), note.c_str());
  }
}

}  // namespace recur::cli
