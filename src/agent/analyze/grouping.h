// Grouping zones for the analyses that compare sets of time (overlap): all together, per track
// (one pid/tid pair: a thread, or a GPU stream in Kineto traces), per process, per Kineto
// stream (args.stream), or per rank (trace_labels.h: rank_of_pid). Pure functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "analyze/zone_tree.h"
#include "core/status.h"

namespace recur::analyze {

enum class GroupBy { kAll, kTrack, kProcess, kStream, kRank };

// "all", "track" (or "thread"), "process" (or "pid"), "stream", "rank".
Result<GroupBy> parse_group_by(std::string_view text);
std::string_view group_by_name(GroupBy by);

// The group of a zone: 0 for kAll, the track index, the pid, the stream (-1 without one) or
// the rank.
int64_t group_key(const ZoneTree& tree, uint32_t zone, GroupBy by);
// "all", "python (7/12)", "process python (7)", "stream 7", "rank 1".
std::string group_label(const trace::EventTable& table, GroupBy by, int64_t key);

}  // namespace recur::analyze
