// Names people read for tracks and processes, the rank of a process, and durations formatted
// for tables. Pure functions over a table (thread-safe).
#pragma once

#include <cstdint>
#include <string>

#include "trace/event_table.h"

namespace recur::analyze {

// The tid as written in the trace: its text label (Kineto's "Spans") or the number.
std::string tid_text(const trace::EventTable& t, uint32_t track);
// The pid as written in the trace.
std::string pid_text(const trace::EventTable& t, int64_t pid);
// The thread's name, else tid_text.
std::string thread_text(const trace::EventTable& t, uint32_t track);
// The process name, else pid_text.
std::string process_text(const trace::EventTable& t, int64_t pid);
// For tables: "prefill (7/12)", or "7/12" for an unnamed thread.
std::string thread_label(const trace::EventTable& t, uint32_t track);

// The mutex a lock_wait / lock_held zone (trace/traced_mutex.h) is about: its "mutex" arg,
// else its name.
std::string lock_mutex_name(const trace::EventTable& t, size_t event);

// The rank a process belongs to: pids moved by `recur trace merge` (rank << 22) give their
// rank; otherwise the trace's distributedInfo.rank, else 0.
int64_t rank_of_pid(const trace::EventTable& t, int64_t pid);

// "850 ns", "12.500 us", "3.250 ms", "1.200 s"; negative values keep their sign.
std::string format_ns(int64_t ns);
// Signed: "+3.250 ms", "-12 ns".
std::string format_delta_ns(int64_t ns);
// A time since the trace's first zone: "+3.250 ms".
std::string format_offset_ns(int64_t ns);

}  // namespace recur::analyze
