// locks: who waited on which mutex, for how long, while which thread held it, and inside
// which zones — from TracedMutex's events (trace/traced_mutex.h): a `lock_wait` zone on the
// waiter's track (wait begin to acquired; args mutex, holder_tid = the thread holding the mutex
// when the wait began) and a `lock_held` zone on the holder's track (acquired to released).
//
// For each wait: the waiter's zone is the innermost zone enclosing the wait that is not itself
// a lock zone. The holder is the thread holder_tid names (a track with that tid, the waiter's
// process first); without a usable holder_tid (0: the holder had not published itself yet),
// the thread whose lock_held zone of the same mutex covers the wait's begin. The holder's zone
// is its innermost non-lock zone at the wait's begin (what it was doing while the waiter
// waited); `held_in` is the zone it took the lock in (the lock_held zone's parent).
// Waits are summed per mutex and per (waiter thread, waiter zone, holder thread, holder zone).
// Pure function of the tree.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "analyze/selector.h"
#include "analyze/zone_tree.h"
#include "core/feedback.h"

namespace recur::analyze {

struct LocksOptions {
  Selector select = Selector::all();  // which lock_wait zones count (e.g. arg:mutex=kv_pool)
  size_t top = 10;                    // rows per mutex in text and Feedback
};

inline constexpr uint32_t kNoTrack = UINT32_MAX;

struct LockWait {
  uint32_t wait_zone = kNoZone;
  std::string mutex;
  uint32_t waiter_zone = kNoZone;
  std::optional<int64_t> holder_tid;  // as recorded
  uint32_t holder_track = kNoTrack;
  uint32_t held_zone = kNoZone;       // the holder's lock_held zone covering the wait's begin
  uint32_t holder_zone = kNoZone;     // the holder's innermost non-lock zone then
  uint32_t held_in = kNoZone;         // the zone the holder took the lock in
};

struct LockRow {
  std::string waiter, waiter_zone, holder, holder_zone;  // thread labels and zone paths
  uint64_t count = 0;
  int64_t total_ns = 0, max_ns = 0;
};

struct MutexLocks {
  std::string mutex;
  uint64_t waits = 0, holds = 0;
  int64_t wait_ns = 0, wait_max_ns = 0, held_ns = 0, held_max_ns = 0;
  std::vector<LockRow> rows;  // largest total first
};

struct LocksResult {
  std::vector<MutexLocks> mutexes;  // largest total wait first
  std::vector<LockWait> waits;      // every counted wait, in zone order
  int64_t wait_ns = 0;
  uint64_t waits_without_holder = 0;
  int64_t wait_without_holder_ns = 0;
};

LocksResult analyze_locks(const ZoneTree& tree, const LocksOptions& options);

std::string render_locks(const LocksOptions& options, const LocksResult& r);
// "analyze.locks": wait metrics, and the total wait decomposed by (mutex, holder thread, holder
// zone); waits whose holder was not found are `unattributed`.
Feedback locks_feedback(const LocksOptions& options, const LocksResult& r, std::string_view trace_name);
nlohmann::json locks_details(const ZoneTree& tree, const LocksResult& r);

}  // namespace recur::analyze
