// locks: the holder from holder_tid and from the hold covering the wait, the zones on both
// sides, and totals per mutex — by hand.
#include "analyze/locks.h"

#include <gtest/gtest.h>

#include "analyze/analyze_test_util.h"

namespace recur::analyze {
namespace {

using testing::TraceBuilder;

// holder (tid 11): send [0,100) { held mu [10,60) { copy [20,50) } }
// waiter (tid 22): recv [0,100) { wait mu [25,60) holder 11; held mu [60,70) }
// third  (tid 33): poll [60,90) { wait mu [65,75) holder 0 (unknown when it began) }
//                  wait on "nobody" [80,85) holder 999 (no such thread, no holds)
trace::EventTable lock_trace() {
  TraceBuilder b;
  uint32_t h = b.thread(5, 11, "holder"), w = b.thread(5, 22, "waiter"), x = b.thread(5, 33, "third");
  b.zone(h, "send", 0, 100);
  b.lock_held(h, "mu", 10, 60);
  b.zone(h, "copy", 20, 50);
  b.zone(w, "recv", 0, 100);
  b.lock_wait(w, "mu", 25, 60, 11);
  b.lock_held(w, "mu", 60, 70);
  b.zone(x, "poll", 60, 90);
  b.lock_wait(x, "mu", 65, 75, 0);
  b.lock_wait(x, "nobody", 80, 85, 999);
  return b.finish();
}

TEST(Locks, FindsHolderZonesAndTotals) {
  trace::EventTable t = lock_trace();
  ZoneTree tree(t);
  LocksResult r = analyze_locks(tree, LocksOptions{});
  ASSERT_EQ(r.waits.size(), 3u);
  EXPECT_EQ(r.wait_ns, 35 + 10 + 5);
  EXPECT_EQ(r.waits_without_holder, 1u);
  EXPECT_EQ(r.wait_without_holder_ns, 5);

  const LockWait& first = r.waits[0];  // zone order: holder's track, then waiter's
  EXPECT_EQ(first.mutex, "mu");
  EXPECT_EQ(first.holder_tid, 11);
  EXPECT_EQ(t.tracks()[first.holder_track].tid, 11);
  EXPECT_EQ(tree.zone_path(first.waiter_zone), "recv");
  EXPECT_EQ(tree.zone_path(first.holder_zone), "send/mu/copy");  // what the holder was doing at 25
  EXPECT_EQ(tree.zone(first.held_zone).begin, 10);
  EXPECT_EQ(tree.zone_path(first.held_in), "send");

  const LockWait& second = r.waits[1];  // holder_tid 0: found by the hold covering 65
  EXPECT_EQ(second.holder_tid, 0);
  EXPECT_EQ(t.tracks()[second.holder_track].tid, 22);
  EXPECT_EQ(tree.zone_path(second.holder_zone), "recv");
  EXPECT_EQ(tree.zone_path(second.waiter_zone), "poll");

  const LockWait& third = r.waits[2];
  EXPECT_EQ(third.mutex, "nobody");
  EXPECT_EQ(third.holder_track, kNoTrack);

  ASSERT_EQ(r.mutexes.size(), 2u);
  const MutexLocks& mu = r.mutexes[0];
  EXPECT_EQ(mu.mutex, "mu");
  EXPECT_EQ(mu.waits, 2u);
  EXPECT_EQ(mu.wait_ns, 45);
  EXPECT_EQ(mu.wait_max_ns, 35);
  EXPECT_EQ(mu.holds, 2u);
  EXPECT_EQ(mu.held_ns, 60);
  ASSERT_EQ(mu.rows.size(), 2u);
  EXPECT_EQ(mu.rows[0].waiter, "waiter (5/22)");
  EXPECT_EQ(mu.rows[0].waiter_zone, "recv");
  EXPECT_EQ(mu.rows[0].holder, "holder (5/11)");
  EXPECT_EQ(mu.rows[0].holder_zone, "send/mu/copy");
  EXPECT_EQ(mu.rows[0].total_ns, 35);

  Feedback f = locks_feedback(LocksOptions{}, r, "t.json");
  ASSERT_TRUE(validate_feedback(f)) << validate_feedback(f).error().to_string();
  ASSERT_EQ(f.attribution.size(), 3u);
  EXPECT_EQ(f.attribution[0].component, "lock:mu held by holder (5/11) in send/mu/copy");
  EXPECT_DOUBLE_EQ(f.attribution[0].share, 35.0 / 50.0);
  EXPECT_EQ(f.attribution[2].component, "unattributed");
  EXPECT_DOUBLE_EQ(f.attribution[2].share, 5.0 / 50.0);
  std::string text = render_locks(LocksOptions{}, r);
  EXPECT_NE(text.find("mutex mu: 2 waits, 45 ns total, max 35 ns; held 2 times, 60 ns total, max 50 ns"),
            std::string::npos)
      << text;
}

TEST(Locks, SelectorAndTracesWithoutLocks) {
  trace::EventTable t = lock_trace();
  ZoneTree tree(t);
  LocksOptions o;
  o.select = *Selector::parse("thread=third");
  LocksResult r = analyze_locks(tree, o);
  EXPECT_EQ(r.waits.size(), 2u);
  EXPECT_EQ(r.wait_ns, 15);

  TraceBuilder b;
  b.zone(b.thread(1, 1), "x", 0, 10);
  trace::EventTable plain = b.finish();
  ZoneTree plain_tree(plain);
  LocksResult none = analyze_locks(plain_tree, LocksOptions{});
  EXPECT_TRUE(none.mutexes.empty());
  Feedback f = locks_feedback(LocksOptions{}, none, "plain.json");
  EXPECT_TRUE(validate_feedback(f));
  EXPECT_EQ(f.notes[0], "no lock events in this trace");
  EXPECT_NE(render_locks(LocksOptions{}, none).find("no lock_wait or lock_held zones"), std::string::npos);
}

}  // namespace
}  // namespace recur::analyze
