#include "analyze/grouping.h"

#include <fmt/format.h>

#include "analyze/trace_labels.h"

namespace recur::analyze {

Result<GroupBy> parse_group_by(std::string_view text) {
  if (text == "all") return GroupBy::kAll;
  if (text == "track" || text == "thread") return GroupBy::kTrack;
  if (text == "process" || text == "pid") return GroupBy::kProcess;
  if (text == "stream") return GroupBy::kStream;
  if (text == "rank") return GroupBy::kRank;
  return invalid_argument("group by '{}': expected all, track, thread, process, pid, stream or rank", text);
}

std::string_view group_by_name(GroupBy by) {
  switch (by) {
    case GroupBy::kAll: return "all";
    case GroupBy::kTrack: return "track";
    case GroupBy::kProcess: return "process";
    case GroupBy::kStream: return "stream";
    case GroupBy::kRank: return "rank";
  }
  return "?";
}

int64_t group_key(const ZoneTree& tree, uint32_t zone, GroupBy by) {
  const trace::EventTable& t = tree.table();
  const Zone& z = tree.zone(zone);
  switch (by) {
    case GroupBy::kAll: return 0;
    case GroupBy::kTrack: return z.track;
    case GroupBy::kProcess: return t.tracks()[z.track].pid;
    case GroupBy::kStream: return t.int_arg(z.event, "stream").value_or(-1);
    case GroupBy::kRank: return rank_of_pid(t, t.tracks()[z.track].pid);
  }
  return 0;
}

std::string group_label(const trace::EventTable& table, GroupBy by, int64_t key) {
  switch (by) {
    case GroupBy::kAll: return "all";
    case GroupBy::kTrack: return thread_label(table, uint32_t(key));
    case GroupBy::kProcess: return fmt::format("process {} ({})", process_text(table, key), pid_text(table, key));
    case GroupBy::kStream: return key < 0 ? "no stream" : fmt::format("stream {}", key);
    case GroupBy::kRank: return fmt::format("rank {}", key);
  }
  return "?";
}

}  // namespace recur::analyze
