// breakdown: rows by name and path with self time, nearest-rank percentiles and shares; per
// thread busy, idle and lock-wait time — worked out by hand.
#include "analyze/breakdown.h"

#include <gtest/gtest.h>

#include "analyze/analyze_test_util.h"

namespace recur::analyze {
namespace {

using testing::TraceBuilder;

// main: step [0,100) { layer.0 [10,50) { attention [20,30) }, layer.1 [50,90) { held mu [60,70) } }
// worker: step [5,25) { layer.0 [5,25) }, then waits on mu [30,40).
trace::EventTable layered_trace() {
  TraceBuilder b;
  uint32_t main = b.thread(1, 1, "main"), worker = b.thread(1, 2, "worker");
  b.zone(main, "step", 0, 100);
  b.zone(main, "layer", 10, 50).arg("layer", 0);
  b.zone(main, "attention", 20, 30);
  b.zone(main, "layer", 50, 90).arg("layer", 1);
  b.lock_held(main, "mu", 60, 70);
  b.zone(worker, "step", 5, 25);
  b.zone(worker, "layer", 5, 25).arg("layer", 0);
  b.lock_wait(worker, "mu", 30, 40, 1);
  return b.finish();
}

const BreakdownRow& row(const BreakdownResult& r, std::string_view key) {
  for (const BreakdownRow& row : r.rows)
    if (row.key == key) return row;
  ADD_FAILURE() << "no row " << key;
  return r.rows.front();
}

TEST(Breakdown, ByNameSelfTimeSharesAndPercentiles) {
  trace::EventTable t = layered_trace();
  ZoneTree tree(t);
  BreakdownResult r = analyze_breakdown(tree, BreakdownOptions{});
  EXPECT_EQ(r.zones, 8u);
  EXPECT_EQ(r.span_ns, 100);
  // Self times partition the busy thread-time: main 100 + worker 20 + 10.
  EXPECT_EQ(r.self_total_ns, 130);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].key, "layer");  // largest self first
  const BreakdownRow& layer = row(r, "layer");
  EXPECT_EQ(layer.count, 3u);
  EXPECT_EQ(layer.total_ns, 100);
  EXPECT_EQ(layer.self_ns, 30 + 30 + 20);
  EXPECT_EQ(layer.mean_ns, 33);
  EXPECT_EQ(layer.p50_ns, 40);  // sorted 20, 40, 40: rank ceil(1.5) = 2
  EXPECT_EQ(layer.p99_ns, 40);
  EXPECT_EQ(layer.max_ns, 40);
  EXPECT_DOUBLE_EQ(layer.share, 80.0 / 130.0);
  EXPECT_EQ(row(r, "step").self_ns, 20);
  EXPECT_EQ(row(r, "mu").count, 2u);  // the hold and the wait
  EXPECT_EQ(row(r, "mu").self_ns, 20);
  EXPECT_EQ(row(r, "attention").p50_ns, 10);
  double sum = 0;
  for (const BreakdownRow& x : r.rows) sum += x.share;
  EXPECT_DOUBLE_EQ(sum, 1.0);

  ASSERT_EQ(r.threads.size(), 2u);
  EXPECT_EQ(r.threads[0].label, "main (1/1)");
  EXPECT_EQ(r.threads[0].busy_ns, 100);
  EXPECT_EQ(r.threads[0].idle_ns, 0);
  EXPECT_EQ(r.threads[0].wait_ns, 0);
  EXPECT_EQ(r.threads[1].busy_ns, 30);
  EXPECT_EQ(r.threads[1].idle_ns, 70);
  EXPECT_EQ(r.threads[1].wait_ns, 10);
  EXPECT_EQ(r.threads[1].first_ns, 5);
  EXPECT_EQ(r.threads[1].last_ns, 40);
}

TEST(Breakdown, ByPathAcrossThreadsAndSelected) {
  trace::EventTable t = layered_trace();
  ZoneTree tree(t);
  BreakdownOptions o;
  o.by = BreakdownBy::kPath;
  BreakdownResult r = analyze_breakdown(tree, o);
  EXPECT_EQ(row(r, "step/layer.0").count, 2u);  // one per thread
  EXPECT_EQ(row(r, "step/layer.0").self_ns, 30 + 20);
  EXPECT_EQ(row(r, "step/layer.1").self_ns, 30);
  EXPECT_EQ(row(r, "step/layer.1/mu").self_ns, 10);
  EXPECT_EQ(row(r, "mu").self_ns, 10);  // the worker's wait is a root zone
  EXPECT_EQ(row(r, "step").self_ns, 20);

  o.select = *Selector::parse("thread=worker");
  o.by = BreakdownBy::kName;
  r = analyze_breakdown(tree, o);
  EXPECT_EQ(r.self_total_ns, 30);
  ASSERT_EQ(r.threads.size(), 1u);
  EXPECT_EQ(r.threads[0].busy_ns, 30);

  Feedback f = breakdown_feedback(o, r, "t.json");
  ASSERT_TRUE(validate_feedback(f)) << validate_feedback(f).error().to_string();
  EXPECT_TRUE(f.attribution_is_decomposition);
  EXPECT_DOUBLE_EQ(f.find_metric("lock_wait_us")->value, 0.01);
  std::string text = render_breakdown(tree, o, r);
  EXPECT_NE(text.find("worker (1/2)"), std::string::npos) << text;
}

TEST(Breakdown, TopRowsAndTheRestInFeedback) {
  trace::EventTable t = layered_trace();
  ZoneTree tree(t);
  BreakdownOptions o;
  o.top = 2;
  BreakdownResult r = analyze_breakdown(tree, o);
  Feedback f = breakdown_feedback(o, r, "t.json");
  ASSERT_TRUE(validate_feedback(f)) << validate_feedback(f).error().to_string();
  ASSERT_EQ(f.attribution.size(), 4u);  // 2 rows, "(2 more names)", unattributed
  EXPECT_EQ(f.attribution[2].component, "(2 more names)");
  EXPECT_DOUBLE_EQ(f.attribution[2].share, 30.0 / 130.0);
}

TEST(Breakdown, NearestRank) {
  EXPECT_EQ(nearest_rank({}, 50), 0);
  EXPECT_EQ(nearest_rank({7}, 99), 7);
  std::vector<int64_t> v{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  EXPECT_EQ(nearest_rank(v, 50), 5);
  EXPECT_EQ(nearest_rank(v, 99), 10);
  EXPECT_EQ(nearest_rank(v, 10), 1);
  EXPECT_EQ(*parse_breakdown_by("category"), BreakdownBy::kCategory);
  EXPECT_FALSE(parse_breakdown_by("size"));
}

}  // namespace
}  // namespace recur::analyze
