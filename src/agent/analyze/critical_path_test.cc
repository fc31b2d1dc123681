// critical-path: paths across two threads through a flow, a lock hand-off and a join, and a
// single thread with nested zones — lengths and components worked out by hand.
#include "analyze/critical_path.h"

#include <gtest/gtest.h>

#include "analyze/analyze_test_util.h"

namespace recur::analyze {
namespace {

using testing::TraceBuilder;

const PathComponent* component(const CriticalPathResult& r, std::string_view name) {
  for (const PathComponent& c : r.components)
    if (c.component == name) return &c;
  return nullptr;
}

void expect_shares_sum_to_one(const CriticalPathResult& r) {
  double sum = 0;
  int64_t ns = 0;
  for (const PathComponent& c : r.components) {
    sum += c.share;
    ns += c.ns;
  }
  EXPECT_NEAR(sum, 1.0, 1e-12);
  EXPECT_EQ(ns, r.length_ns());
  EXPECT_EQ(r.work_ns + r.wait_ns + r.idle_ns + r.latency_ns, r.length_ns());
}

TEST(CriticalPath, FollowsAFlowWhenTheConsumerWasIdle) {
  // producer: produce [0,50), "kv" flow begins at 40. consumer: warmup [0,10), idle, then
  // consume [60,100) where the flow ends. The consumer was idle at 60: the flow decided it.
  TraceBuilder b;
  uint32_t p = b.thread(1, 1, "producer"), c = b.thread(1, 2, "consumer");
  b.zone(p, "produce", 0, 50);
  b.flow(p, 's', "kv", 1, 40);
  b.zone(c, "warmup", 0, 10);
  b.zone(c, "consume", 60, 100);
  b.flow(c, 'f', "kv", 1, 70);  // inside consume: the edge lands on consume's begin
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  CriticalPathResult r = *analyze_critical_path(tree, CriticalPathOptions{});
  EXPECT_EQ(r.begin, 0);
  EXPECT_EQ(r.end, 100);
  EXPECT_EQ(r.length_ns(), 100);
  EXPECT_EQ(r.flow_edges, 1u);
  EXPECT_EQ(r.flow_used, 1u);
  EXPECT_EQ(r.work_ns, 80);
  EXPECT_EQ(r.latency_ns, 20);  // 40 -> 60
  ASSERT_NE(component(r, "produce"), nullptr);
  EXPECT_EQ(component(r, "produce")->ns, 40);
  EXPECT_EQ(component(r, "consume")->ns, 40);
  EXPECT_DOUBLE_EQ(component(r, "consume")->share, 0.4);
  EXPECT_EQ(component(r, "warmup"), nullptr);  // not on the path
  expect_shares_sum_to_one(r);
  ASSERT_EQ(r.segments.size(), 3u);
  EXPECT_EQ(r.segments[1].kind, SegmentKind::kFlow);
  EXPECT_EQ(r.via(r.segments[1]), "kv#1");
  EXPECT_EQ(r.threads.size(), 2u);

  Feedback f = critical_path_feedback(tree, CriticalPathOptions{}, r, "t.json");
  ASSERT_TRUE(validate_feedback(f)) << validate_feedback(f).error().to_string();
  EXPECT_DOUBLE_EQ(f.find_metric("path_us")->value, 0.1);
}

TEST(CriticalPath, StaysOnABusyThreadWhenTheFlowArrivedEarly) {
  // The consumer was busy until the flow's zone began: its own work is critical.
  TraceBuilder b;
  uint32_t p = b.thread(1, 1), c = b.thread(1, 2);
  b.zone(p, "produce", 0, 20);
  b.flow(p, 's', "kv", 1, 10);
  b.zone(c, "busy", 0, 60);
  b.zone(c, "consume", 60, 100);
  b.flow(c, 'f', "kv", 1, 60);
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  CriticalPathResult r = *analyze_critical_path(tree, CriticalPathOptions{});
  EXPECT_EQ(r.flow_used, 0u);
  EXPECT_EQ(r.length_ns(), 100);
  EXPECT_EQ(component(r, "busy")->ns, 60);
  EXPECT_EQ(component(r, "produce"), nullptr);
  expect_shares_sum_to_one(r);
}

TEST(CriticalPath, FollowsTheLockReleaseIntoTheWaiter) {
  // a: work_a [0,80) { held mu [20,80) }; b: work_b [0,100) { wait mu [30,80) }.
  TraceBuilder b;
  uint32_t ta = b.thread(1, 1, "a"), tb = b.thread(1, 2, "b");
  b.zone(ta, "work_a", 0, 80);
  b.lock_held(ta, "mu", 20, 80);
  b.zone(tb, "work_b", 0, 100);
  b.lock_wait(tb, "mu", 30, 80, 1);
  b.lock_held(tb, "mu", 80, 90);
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  CriticalPathResult r = *analyze_critical_path(tree, CriticalPathOptions{});
  EXPECT_EQ(r.lock_edges, 1u);
  EXPECT_EQ(r.lock_used, 1u);
  EXPECT_EQ(r.begin, 0);
  EXPECT_EQ(r.length_ns(), 100);
  EXPECT_EQ(r.wait_ns, 0);  // the wait is explained by the holder's critical section
  EXPECT_EQ(component(r, "work_a")->ns, 20);
  EXPECT_EQ(component(r, "work_a/mu")->ns, 60);  // the holder's critical section
  EXPECT_EQ(component(r, "work_b/mu")->ns, 10);
  EXPECT_EQ(component(r, "work_b")->ns, 10);
  EXPECT_EQ(component(r, "wait: work_b/mu"), nullptr);
  expect_shares_sum_to_one(r);
  std::string text = render_critical_path(tree, CriticalPathOptions{}, r);
  EXPECT_NE(text.find("mu a (1/1) -> b (1/2)"), std::string::npos) << text;
}

TEST(CriticalPath, JoinWaitsForTheLastThreadToFinish) {
  // main: spawn [0,5), join [5,95); worker: task [2,90); helper: quick [3,20).
  TraceBuilder b;
  uint32_t m = b.thread(1, 1, "main"), w = b.thread(1, 2, "worker"), h = b.thread(1, 3, "helper");
  b.zone(m, "spawn", 0, 5);
  b.zone(m, "join", 5, 95);
  b.zone(w, "task", 2, 90);
  b.zone(h, "quick", 3, 20);
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  CriticalPathResult r = *analyze_critical_path(tree, CriticalPathOptions{});
  EXPECT_EQ(r.join_edges, 1u);
  EXPECT_EQ(r.join_used, 1u);
  EXPECT_EQ(r.begin, 2);
  EXPECT_EQ(r.end, 95);
  EXPECT_EQ(component(r, "task")->ns, 88);
  EXPECT_EQ(component(r, "(dependency latency)")->ns, 5);
  expect_shares_sum_to_one(r);

  // Without the join selector the wait has no known cause: it stays on the path as a wait.
  CriticalPathOptions o;
  o.join = *Selector::parse("name=nothing");
  r = *analyze_critical_path(tree, o);
  EXPECT_EQ(r.join_edges, 0u);
  EXPECT_EQ(r.begin, 0);
  EXPECT_EQ(component(r, "spawn")->ns, 5);
  EXPECT_EQ(component(r, "join")->ns, 90);  // not a wait zone now: plain work
  expect_shares_sum_to_one(r);
}

TEST(CriticalPath, OneThreadWithNestedZonesAndGaps) {
  // step [0,50) { a [0,20) { b [5,10) } }, gap, step [60,100) with a zero-length mark.
  TraceBuilder b;
  uint32_t m = b.thread(1, 1);
  b.zone(m, "step", 0, 50);
  b.zone(m, "a", 0, 20);
  b.zone(m, "b", 5, 10);
  b.zone(m, "step", 60, 100);
  b.zone(m, "mark", 70, 70);
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  CriticalPathResult r = *analyze_critical_path(tree, CriticalPathOptions{});
  EXPECT_EQ(r.length_ns(), 100);
  EXPECT_EQ(r.idle_ns, 10);
  EXPECT_EQ(component(r, "step")->ns, 30 + 40);  // self time of both steps
  EXPECT_EQ(component(r, "step/a")->ns, 15);
  EXPECT_EQ(component(r, "step/a/b")->ns, 5);
  EXPECT_EQ(component(r, "(idle)")->ns, 10);
  expect_shares_sum_to_one(r);
  Feedback f = critical_path_feedback(tree, CriticalPathOptions{}, r, "t.json");
  ASSERT_TRUE(validate_feedback(f)) << validate_feedback(f).error().to_string();
  EXPECT_EQ(f.attribution.back().component, "unattributed");
  EXPECT_DOUBLE_EQ(f.attribution.back().share, 0.1);
  // Segments merge across the zero-length mark: step [60,100) is one piece.
  EXPECT_EQ(r.segments.back().begin, 60);
  EXPECT_EQ(r.segments.back().end, 100);
}

TEST(CriticalPath, IgnoresKinetosWholeRecordingSpan) {
  // Kineto's "PyTorch Profiler (0)" (cat Trace) covers everything and ends last; it is no work.
  TraceBuilder b;
  uint32_t m = b.thread(1, 1), span = b.thread(2, 2);
  b.zone(m, "step", 10, 50);
  b.zone(span, "PyTorch Profiler (0)", 0, 60, "Trace");
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  CriticalPathResult r = *analyze_critical_path(tree, CriticalPathOptions{});
  EXPECT_EQ(r.begin, 10);
  EXPECT_EQ(r.end, 50);
  EXPECT_EQ(component(r, "step")->ns, 40);
  CriticalPathOptions keep;
  keep.ignore.reset();
  r = *analyze_critical_path(tree, keep);
  EXPECT_EQ(r.end, 60);
  EXPECT_EQ(component(r, "PyTorch Profiler (0)")->ns, 60);
}

TEST(CriticalPath, EndsAtTheSelectedZone) {
  // A watchdog polls long after the work; the path should end with the step instead.
  TraceBuilder b;
  uint32_t m = b.thread(1, 1), dog = b.thread(1, 2);
  b.zone(m, "step", 10, 50);
  b.zone(dog, "poll", 0, 5);
  b.zone(dog, "poll", 500, 505);
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  CriticalPathResult last = *analyze_critical_path(tree, CriticalPathOptions{});
  EXPECT_EQ(last.end, 505);
  EXPECT_EQ(last.idle_ns, 495);
  CriticalPathOptions o;
  o.end = *Selector::parse("name=step");
  CriticalPathResult r = *analyze_critical_path(tree, o);
  EXPECT_EQ(r.begin, 10);
  EXPECT_EQ(r.end, 50);
  o.end = *Selector::parse("name=nothing");
  auto missing = analyze_critical_path(tree, o);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().message(), "critical path: end 'name=nothing' selects no zone (3 zones in the trace)");
}

TEST(CriticalPath, EmptyTrace) {
  trace::EventTable t;
  ZoneTree tree(t);
  CriticalPathResult r = *analyze_critical_path(tree, CriticalPathOptions{});
  EXPECT_TRUE(r.segments.empty());
  EXPECT_TRUE(validate_feedback(critical_path_feedback(tree, CriticalPathOptions{}, r, "empty.json")));
  EXPECT_EQ(render_critical_path(tree, CriticalPathOptions{}, r), "critical path: the trace has no zones\n");
}

}  // namespace
}  // namespace recur::analyze
