#include "trace/trace_tools.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace recur::trace {

std::vector<std::string> recovery_notes(const TraceInfo& info) {
  std::vector<std::string> notes;
  if (info.unclosed_begin_events > 0) {
    notes.push_back(fmt::format("recovered: {} B without E closed at track end: those zones end where their track's "
                                "last event ends, so their durations are guesses, not measurements",
                                info.unclosed_begin_events));
  }
  if (info.unmatched_end_events > 0) {
    notes.push_back(fmt::format("recovered: {} E without B dropped", info.unmatched_end_events));
  }
  if (info.invalid_utf8_bytes > 0) {
    std::string at = fmt::format("{}", fmt::join(info.invalid_utf8_offsets, ", "));
    if (info.invalid_utf8_bytes > info.invalid_utf8_offsets.size()) at += ", ...";
    notes.push_back(fmt::format("recovered: {} invalid UTF-8 byte{} replaced by U+FFFD{}", info.invalid_utf8_bytes,
                                info.invalid_utf8_bytes == 1 ? "" : "s",
                                info.invalid_utf8_offsets.empty()
                                    ? ""
                                    : fmt::format(" (at byte{} {})", info.invalid_utf8_bytes == 1 ? "" : "s", at)));
  }
  return notes;
}

TraceStats trace_stats(const EventTable& t, size_t top_n) {
  TraceStats s;
  s.events = t.size();
  s.tracks = t.tracks().size();
  s.processes = t.processes().size();
  s.dropped_events = t.info().dropped_events;
  s.unmatched_end_events = t.info().unmatched_end_events;
  s.unclosed_begin_events = t.info().unclosed_begin_events;
  s.rank = t.info().rank;
  s.world_size = t.info().world_size;
  std::unordered_map<StringId, NameStat> by_name;
  bool any = false;
  for (size_t i = 0; i < t.size(); ++i) {
    char ph = t.phase(i);
    ++s.phases[ph];
    if (ph == 'M') continue;
    int64_t end = t.ts_ns(i) + (ph == 'X' ? t.dur_ns(i) : 0);
    if (!any) {
      s.first_ts_ns = t.ts_ns(i);
      s.last_end_ns = end;
      any = true;
    }
    s.first_ts_ns = std::min(s.first_ts_ns, t.ts_ns(i));
    s.last_end_ns = std::max(s.last_end_ns, end);
    NameStat& ns = by_name[t.name_id(i)];
    ++ns.count;
    if (ph == 'X') ns.total_dur_ns += t.dur_ns(i);
  }
  for (auto& [id, ns] : by_name) {
    ns.name = std::string(t.str(id));
    s.top_names.push_back(std::move(ns));
  }
  std::sort(s.top_names.begin(), s.top_names.end(), [](const NameStat& a, const NameStat& b) {
    if (a.total_dur_ns != b.total_dur_ns) return a.total_dur_ns > b.total_dur_ns;
    if (a.count != b.count) return a.count > b.count;
    return a.name < b.name;
  });
  if (s.top_names.size() > top_n) s.top_names.resize(top_n);
  return s;
}

Result<EventTable> merge_traces(const std::vector<EventTable>& inputs) {
  EventTable out;
  std::set<int64_t> ranks;
  std::optional<int64_t> world;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const EventTable& in = inputs[k];
    int64_t rank = in.info().rank.value_or(int64_t(k));
    if (rank < 0 || rank >= 256) {
      return make_error(ErrorCode::kFailedPrecondition, "input {}: rank {} is outside 0..255, the ranks a merged trace can hold", k, rank);
    }
    if (!ranks.insert(rank).second) {
      return make_error(ErrorCode::kFailedPrecondition, "input {}: rank {} appears twice (distributedInfo.rank)", k, rank);
    }
    if (in.info().world_size) world = std::max(world.value_or(0), *in.info().world_size);
    int64_t offset = rank << kRankPidShift;
    size_t first_process = out.processes().size();
    out.append(in, offset);
    for (size_t p = first_process; p < out.processes().size(); ++p) {
      Process& proc = out.processes()[p];
      std::string base(proc.name != 0 ? out.str(proc.name)
                                      : (proc.label != 0 ? out.str(proc.label) : std::string_view()));
      std::string name = base.empty() ? fmt::format("rank {} pid {}", rank, proc.pid - offset)
                                      : fmt::format("rank {} {}", rank, base);
      proc.name = out.strings().intern(name);
      proc.sort_index = rank * 1000000 + proc.sort_index.value_or(0);
    }
  }
  out.info().world_size = world;
  out.finalize();
  return out;
}

}  // namespace recur::trace
