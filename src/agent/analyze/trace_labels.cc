#include "analyze/trace_labels.h"

#include <cstdlib>

#include <fmt/format.h>

#include "trace/trace_tools.h"

namespace recur::analyze {

std::string tid_text(const trace::EventTable& t, uint32_t track) {
  const trace::Track& tr = t.tracks()[track];
  if (tr.tid_label != 0) return std::string(t.str(tr.tid_label));
  return std::to_string(tr.tid);
}

std::string pid_text(const trace::EventTable& t, int64_t pid) {
  const trace::Process* p = t.find_process(pid);
  if (p != nullptr && p->label != 0) return std::string(t.str(p->label));
  return std::to_string(pid);
}

std::string thread_text(const trace::EventTable& t, uint32_t track) {
  const trace::Track& tr = t.tracks()[track];
  if (tr.thread_name != 0) return std::string(t.str(tr.thread_name));
  return tid_text(t, track);
}

std::string process_text(const trace::EventTable& t, int64_t pid) {
  const trace::Process* p = t.find_process(pid);
  if (p != nullptr && p->name != 0) return std::string(t.str(p->name));
  return pid_text(t, pid);
}

std::string thread_label(const trace::EventTable& t, uint32_t track) {
  const trace::Track& tr = t.tracks()[track];
  std::string ids = pid_text(t, tr.pid) + "/" + tid_text(t, track);
  if (tr.thread_name == 0) return ids;
  return fmt::format("{} ({})", t.str(tr.thread_name), ids);
}

std::string lock_mutex_name(const trace::EventTable& t, size_t event) {
  const trace::Arg* a = t.find_arg(event, "mutex");
  if (a != nullptr && a->type == trace::ArgType::kString) return std::string(t.str(a->s));
  return std::string(t.name(event));
}

int64_t rank_of_pid(const trace::EventTable& t, int64_t pid) {
  int64_t p = pid >= trace::kSyntheticIdBase ? pid - trace::kSyntheticIdBase : pid;
  int64_t shifted = p >> trace::kRankPidShift;
  if (shifted > 0 && shifted < 256) return shifted;
  return t.info().rank.value_or(0);
}

std::string format_ns(int64_t ns) {
  int64_t a = std::llabs(ns);
  if (a < 1000) return fmt::format("{} ns", ns);
  if (a < 1000000) return fmt::format("{:.3f} us", double(ns) / 1e3);
  if (a < 1000000000) return fmt::format("{:.3f} ms", double(ns) / 1e6);
  return fmt::format("{:.3f} s", double(ns) / 1e9);
}

// fmt rather than "+" + std::string: g++ 12 warns falsely (-Wrestrict) on the latter at -O3.
std::string format_delta_ns(int64_t ns) { return fmt::format("{}{}", ns >= 0 ? "+" : "", format_ns(ns)); }

std::string format_offset_ns(int64_t ns) { return fmt::format("+{}", format_ns(ns)); }

}  // namespace recur::analyze
