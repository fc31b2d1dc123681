// Synthetic traces for the analysis tests (not part of the library): tracks, zones with args,
// flows, lock waits and holds, built through the EventTable API so every answer can be worked
// out by hand.
#pragma once

#include <cstdint>
#include <string_view>

#include "trace/event_table.h"
#include "trace/traced_mutex.h"

namespace recur::analyze::testing {

class TraceBuilder {
 public:
  // The track for pid/tid, named if `name` is not empty.
  uint32_t thread(int64_t pid, int64_t tid, std::string_view name = "") {
    uint32_t tr = t_.track_for(pid, tid);
    if (!name.empty()) t_.tracks()[tr].thread_name = t_.strings().intern(name);
    return tr;
  }
  // A complete zone [begin, end) ns; args added next belong to it.
  TraceBuilder& zone(uint32_t track, std::string_view name, int64_t begin, int64_t end,
                     std::string_view cat = "recur") {
    t_.add_event('X', t_.strings().intern(name), t_.strings().intern(cat), begin, end - begin, track);
    return *this;
  }
  TraceBuilder& arg(std::string_view key, int64_t v) {
    t_.add_arg_int(t_.strings().intern(key), v);
    return *this;
  }
  TraceBuilder& arg(std::string_view key, std::string_view v) {
    t_.add_arg_string(t_.strings().intern(key), v);
    return *this;
  }
  // A flow point: 's', 't' or 'f' (f binds to the enclosing zone unless bind_next).
  TraceBuilder& flow(uint32_t track, char phase, std::string_view name, uint64_t id, int64_t ts,
                     bool bind_next = false) {
    uint8_t flags = trace::kFlagHasId;
    if (phase == 'f' && !bind_next) flags |= trace::kFlagBindEnclosing;
    t_.add_event(phase, t_.strings().intern(name), t_.strings().intern("flow"), ts, 0, track, id, flags);
    return *this;
  }
  // What TracedMutex records: a wait (with the holder's tid) and a hold.
  TraceBuilder& lock_wait(uint32_t track, std::string_view mutex, int64_t begin, int64_t end, int64_t holder_tid) {
    zone(track, mutex, begin, end, trace::kLockWaitCategory);
    arg("mutex", mutex);
    return arg("holder_tid", holder_tid);
  }
  TraceBuilder& lock_held(uint32_t track, std::string_view mutex, int64_t begin, int64_t end) {
    zone(track, mutex, begin, end, trace::kLockHeldCategory);
    return arg("mutex", mutex);
  }
  trace::EventTable& table() { return t_; }
  trace::EventTable finish() {
    t_.finalize();
    return std::move(t_);
  }

 private:
  trace::EventTable t_;
};

}  // namespace recur::analyze::testing
