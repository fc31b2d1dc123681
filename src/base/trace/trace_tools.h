// Whole-trace operations behind `recur trace stats` and `recur trace merge`.
//
// trace_stats() summarises a table: event and track counts, time span, events per phase, the
// top names by total duration, dropped events and the reader's recovery counts. merge_traces()
// puts several ranks' traces into one table: each input keeps its events and times, its pids
// move by rank << 22 (Linux pids are below 2^22) so ranks never share a process, and process
// names gain a "rank N" prefix. Thread-safe (pure functions).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "trace/event_table.h"

namespace recur::trace {

struct NameStat {
  std::string name;
  uint64_t count = 0;
  int64_t total_dur_ns = 0;  // sum of X durations
};

struct TraceStats {
  uint64_t events = 0;
  uint64_t tracks = 0;
  uint64_t processes = 0;
  int64_t first_ts_ns = 0;  // earliest ts (0 if empty)
  int64_t last_end_ns = 0;  // latest ts + dur
  std::map<char, uint64_t> phases;
  std::vector<NameStat> top_names;  // by total duration, then count
  uint64_t dropped_events = 0;
  uint64_t unmatched_end_events = 0;
  uint64_t unclosed_begin_events = 0;
  std::optional<int64_t> rank, world_size;

  int64_t span_ns() const { return last_end_ns - first_ts_ns; }
};

TraceStats trace_stats(const EventTable& table, size_t top_n = 10);

// The reader's recoveries (docs/trace.md, "Documented recoveries") as one line each, for every
// output built on the table: B without E closed at track end (durations guessed, not
// measured), E without B dropped, invalid UTF-8 replaced by U+FFFD (with the first offsets).
// Empty when the input needed none.
std::vector<std::string> recovery_notes(const TraceInfo& info);

inline constexpr int kRankPidShift = 22;

// Merges traces of several ranks. The rank of input k is its distributedInfo.rank, or k.
// Fails if two inputs claim the same rank.
Result<EventTable> merge_traces(const std::vector<EventTable>& inputs);

}  // namespace recur::trace
