// The analyses on a trace recorded by recur's own tracer (trace/trace.h): two threads, a
// TracedMutex and a flow. locks must name the holder and its zone; critical-path must take the
// lock hand-off and see the flow; the trace must survive a Chrome JSON round trip unchanged for
// the analyses.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "analyze/breakdown.h"
#include "analyze/critical_path.h"
#include "analyze/locks.h"
#include "analyze/overlap.h"
#include "trace/chrome_json.h"
#include "trace/test_util.h"
#include "trace/trace.h"
#include "trace/traced_mutex.h"

namespace recur::analyze {
namespace {

// holder: produce { lock kv_pool; flow "handoff" 7 begins; hold ~5 ms }.
// waiter: consume { lock kv_pool (waits for the holder); flow ends }.
trace::EventTable record_two_threads() {
  trace::set_enabled(false);
  trace::reset();
  trace::set_enabled(true);
  trace::TracedMutex mu("analyze_kv_pool");
  std::atomic<bool> held{false};
  std::thread holder([&] {
    trace::set_thread_name("holder");
    RECUR_ZONE("produce");
    std::lock_guard lock(mu);
    RECUR_FLOW_BEGIN("handoff", 7);
    held.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  });
  std::thread waiter([&] {
    trace::set_thread_name("waiter");
    while (!held.load()) std::this_thread::yield();
    RECUR_ZONE("consume");
    std::lock_guard lock(mu);
    RECUR_FLOW_END("handoff", 7);
  });
  holder.join();
  waiter.join();
  trace::set_enabled(false);
  trace::EventTable t = trace::capture();
  trace::reset();
  return t;
}

void check_analyses(const trace::EventTable& t) {
  ZoneTree tree(t);
  LocksResult locks = analyze_locks(tree, LocksOptions{});
  ASSERT_EQ(locks.waits.size(), 1u);
  const LockWait& w = locks.waits[0];
  EXPECT_EQ(w.mutex, "analyze_kv_pool");
  ASSERT_NE(w.holder_track, kNoTrack);
  EXPECT_EQ(t.str(t.tracks()[w.holder_track].thread_name), "holder");
  EXPECT_EQ(tree.zone_path(w.holder_zone), "produce");
  EXPECT_EQ(tree.zone_path(w.waiter_zone), "consume");
  EXPECT_GT(tree.zone(w.wait_zone).dur(), 1'000'000);  // most of the 5 ms hold
  EXPECT_EQ(locks.waits_without_holder, 0u);
  EXPECT_TRUE(validate_feedback(locks_feedback(LocksOptions{}, locks, "recorded")));

  // End at the waiter's last zone: which thread ends last is up to the scheduler.
  CriticalPathOptions cpo;
  cpo.end = *Selector::parse("thread=waiter");
  CriticalPathResult cp = *analyze_critical_path(tree, cpo);
  EXPECT_EQ(cp.flow_edges, 1u);
  EXPECT_EQ(cp.lock_edges, 1u);
  EXPECT_EQ(cp.lock_used, 1u);  // the waiter was blocked until the holder released
  bool holder_section_on_path = false;
  for (const PathComponent& c : cp.components) holder_section_on_path |= c.component == "produce/analyze_kv_pool";
  EXPECT_TRUE(holder_section_on_path);
  EXPECT_EQ(t.str(t.tracks()[cp.end_track].thread_name), "waiter");
  EXPECT_TRUE(validate_feedback(critical_path_feedback(tree, cpo, cp, "recorded")));

  BreakdownResult br = analyze_breakdown(tree, BreakdownOptions{});
  int64_t wait = 0;
  for (const ThreadTime& th : br.threads) wait += th.wait_ns;
  EXPECT_EQ(wait, tree.zone(w.wait_zone).dur());

  OverlapOptions o;
  o.a = *Selector::parse("thread=waiter,cat=lock_wait");
  o.b = *Selector::parse("thread=holder,cat=lock_held");
  OverlapResult ov = analyze_overlap(tree, o);
  // The wait began while the holder held the lock (how long the wake-up took is up to the
  // scheduler).
  EXPECT_GT(ov.total.overlap_ns, 0);
}

TEST(RecordedTrace, LocksAndCriticalPathFindTheHolderAndTheFlow) {
  trace::EventTable t = record_two_threads();
  check_analyses(t);
  // The same analyses on the trace written to Chrome JSON and read back.
  auto back = trace::testing::parse_json_text(trace::chrome_json_string(t));
  ASSERT_TRUE(back) << back.error().to_string();
  check_analyses(*back);
}

}  // namespace
}  // namespace recur::analyze
