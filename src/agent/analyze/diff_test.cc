// diff: alignment by zone path, k-th occurrence matching, decompositions whose shares sum to
// the whole, offsets, zones in one trace only and thread-count changes — by hand.
#include "analyze/diff.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "analyze/analyze_test_util.h"

namespace recur::analyze {
namespace {

using testing::TraceBuilder;

// Two steps; each step [s, e) holds a [.., +30) then b; CAND's b is slower in step 0 and CAND
// adds c in step 1.
trace::EventTable base_trace() {
  TraceBuilder b;
  uint32_t m = b.thread(1, 1, "main");
  b.zone(m, "step", 0, 100);
  b.zone(m, "a", 0, 30);
  b.zone(m, "b", 30, 60);
  b.zone(m, "step", 100, 200);
  b.zone(m, "a", 100, 130);
  b.zone(m, "b", 130, 160);
  return b.finish();
}

trace::EventTable cand_trace() {
  TraceBuilder b;
  uint32_t m = b.thread(1, 1, "main");
  b.zone(m, "step", 0, 120);
  b.zone(m, "a", 0, 30);
  b.zone(m, "b", 30, 80);
  b.zone(m, "step", 120, 220);
  b.zone(m, "a", 120, 150);
  b.zone(m, "b", 150, 180);
  b.zone(m, "c", 180, 190);
  return b.finish();
}

const DiffRow& row(const DiffResult& r, std::string_view path) {
  for (const DiffRow& row : r.rows)
    if (row.path == path) return row;
  ADD_FAILURE() << "no row " << path;
  return r.rows.front();
}

double share_sum(const DiffResult& r) {
  double s = r.unattributed_share;
  for (const DiffRow& row : r.rows) s += row.share;
  return s;
}

TEST(Diff, SharesOfTheGrossChangeSumToTheWhole) {
  trace::EventTable bt = base_trace(), ct = cand_trace();
  ZoneTree base(bt), cand(ct);
  DiffOptions o;
  o.root = *Selector::parse("name=step");
  auto r = analyze_diff(base, cand, o);
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->base_ns, 200);
  EXPECT_EQ(r->cand_ns, 220);
  EXPECT_EQ(r->delta_ns(), 20);
  EXPECT_EQ(r->base_roots, 2u);
  // step self 80 -> 70, a 60 -> 60, b 60 -> 80, c 0 -> 10: one thread, so exact.
  EXPECT_EQ(row(*r, "step").delta_ns(), -10);
  EXPECT_EQ(row(*r, "step/a").delta_ns(), 0);
  EXPECT_EQ(row(*r, "step/b").delta_ns(), 20);
  EXPECT_EQ(row(*r, "step/c").delta_ns(), 10);
  EXPECT_EQ(r->components_ns, 20);
  EXPECT_EQ(r->unattributed_ns, 0);
  EXPECT_EQ(r->gross_ns, 30);
  EXPECT_EQ(r->offsets_ns, 10);
  EXPECT_EQ(r->gross_ns - r->offsets_ns, r->delta_ns());
  EXPECT_DOUBLE_EQ(row(*r, "step/b").share, 20.0 / 30.0);
  EXPECT_DOUBLE_EQ(row(*r, "step/c").share, 10.0 / 30.0);
  EXPECT_DOUBLE_EQ(row(*r, "step").share, 0.0);  // an offset
  EXPECT_NEAR(share_sum(*r), 1.0, 1e-12);
  // k-th occurrence to k-th: b's first occurrence moved +20, its second 0.
  EXPECT_TRUE(row(*r, "step/b").has_worst);
  EXPECT_EQ(row(*r, "step/b").worst_k, 0u);
  EXPECT_EQ(row(*r, "step/b").worst_delta_ns, 20);
  EXPECT_EQ(row(*r, "step/c").base_count, 0u);  // only in CAND
  EXPECT_FALSE(row(*r, "step/c").has_worst);
  EXPECT_EQ(r->rows.front().path, "step/b");  // largest |change| first

  Feedback f = diff_feedback(o, *r, "base.json", "cand.json");
  ASSERT_TRUE(validate_feedback(f)) << validate_feedback(f).error().to_string();
  EXPECT_TRUE(f.attribution_is_decomposition);
  ASSERT_EQ(f.attribution.size(), 3u);
  EXPECT_EQ(f.attribution[0].component, "step/b");
  EXPECT_EQ(f.attribution[2].component, "unattributed");
  EXPECT_DOUBLE_EQ(f.find_metric("change_us")->value, 0.02);
  std::string text = render_diff(o, *r);
  EXPECT_NE(text.find("offset"), std::string::npos) << text;
  EXPECT_NE(text.find("gross change up 30 ns, offsets 10 ns: net +20 ns"), std::string::npos) << text;
}

TEST(Diff, TraceSpanWithoutRoot) {
  trace::EventTable bt = base_trace(), ct = cand_trace();
  ZoneTree base(bt), cand(ct);
  auto r = analyze_diff(base, cand, DiffOptions{});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->measure, "trace span");
  EXPECT_EQ(r->delta_ns(), 20);
  EXPECT_EQ(r->unattributed_ns, 0);  // the steps cover the span
  EXPECT_NEAR(share_sum(*r), 1.0, 1e-12);
}

TEST(Diff, ThreadCountChangeLeavesAnUnattributedRest) {
  // BASE: main does all the work in step; CAND: main and a worker split it in parallel.
  TraceBuilder bb, cb;
  uint32_t bm = bb.thread(1, 1, "main");
  bb.zone(bm, "step", 0, 100);
  bb.zone(bm, "work", 0, 100);
  uint32_t cm = cb.thread(1, 1, "main"), cw = cb.thread(1, 2, "worker");
  cb.zone(cm, "step", 0, 60);
  cb.zone(cm, "work", 0, 60);
  cb.zone(cw, "work", 0, 60);
  trace::EventTable bt = bb.finish(), ct = cb.finish();
  ZoneTree base(bt), cand(ct);
  DiffOptions o;
  o.root = *Selector::parse("name=step");
  auto r = analyze_diff(base, cand, o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->delta_ns(), -40);
  EXPECT_EQ(row(*r, "step/work").delta_ns(), -40);
  EXPECT_EQ(row(*r, "work").delta_ns(), 60);  // the worker's zones: only in CAND
  EXPECT_EQ(r->unattributed_ns, -40 - 20);
  // Moving down: step/work (-40) and the rest (-60) share the gross 100; the worker offsets 60.
  EXPECT_EQ(r->gross_ns, 100);
  EXPECT_EQ(r->offsets_ns, 60);
  EXPECT_DOUBLE_EQ(row(*r, "step/work").share, 0.4);
  EXPECT_DOUBLE_EQ(r->unattributed_share, 0.6);
  EXPECT_NEAR(share_sum(*r), 1.0, 1e-12);
  ASSERT_EQ(r->threads.added.size(), 1u);
  EXPECT_EQ(r->threads.added[0], "worker");
  EXPECT_TRUE(r->threads.removed.empty());
  EXPECT_EQ(r->threads.base_named, 1u);
  EXPECT_EQ(r->threads.cand_named, 2u);
  Feedback f = diff_feedback(o, *r, "b", "c");
  ASSERT_TRUE(validate_feedback(f)) << validate_feedback(f).error().to_string();

  // And back: the worker's thread is removed.
  auto back = analyze_diff(cand, base, o);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->threads.removed.size(), 1u);
  EXPECT_EQ(back->threads.removed[0], "worker");
  EXPECT_NEAR(share_sum(*back), 1.0, 1e-12);
}

TEST(Diff, NoChangeIsAllUnattributedAndMissingRootFails) {
  trace::EventTable bt = base_trace();
  ZoneTree base(bt);
  auto r = analyze_diff(base, base, DiffOptions{});
  ASSERT_TRUE(r);
  EXPECT_EQ(r->delta_ns(), 0);
  EXPECT_DOUBLE_EQ(r->unattributed_share, 1.0);
  EXPECT_TRUE(validate_feedback(diff_feedback(DiffOptions{}, *r, "a", "a")));
  DiffOptions o;
  o.root = *Selector::parse("name=prefill");
  auto missing = analyze_diff(base, base, o);
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  EXPECT_EQ(missing.error().message(), "diff: root 'name=prefill' selects no zone in BASE (6 zones)");
}

TEST(Diff, NestedRootsCountOnceAndZeroLengthZones) {
  TraceBuilder bb, cb;
  uint32_t bm = bb.thread(1, 1);
  bb.zone(bm, "step", 0, 50);
  bb.zone(bm, "step", 10, 20);  // a root inside a root: not counted again
  bb.zone(bm, "mark", 30, 30);
  uint32_t cm = cb.thread(1, 1);
  cb.zone(cm, "step", 0, 80);
  cb.zone(cm, "step", 10, 20);
  cb.zone(cm, "mark", 30, 30);
  trace::EventTable bt = bb.finish(), ct = cb.finish();
  ZoneTree base(bt), cand(ct);
  DiffOptions o;
  o.root = *Selector::parse("name=step");
  auto r = analyze_diff(base, cand, o);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->base_ns, 50);
  EXPECT_EQ(r->cand_ns, 80);
  EXPECT_EQ(r->base_roots, 1u);
  EXPECT_EQ(row(*r, "step").delta_ns(), 30);
  EXPECT_EQ(row(*r, "step/mark").delta_ns(), 0);
  EXPECT_DOUBLE_EQ(row(*r, "step").share, 1.0);
  EXPECT_EQ(r->unattributed_ns, 0);
}

// `recur analyze diff` frees BASE's table and tree before CAND loads (two 1 GB traces cost
// one): the result must be the one with both in memory, path texts included (the builder
// keeps its own copies of the segments, not views into the freed tree).
TEST(Diff, BuilderGivesTheSameResultWithBaseFreedFirst) {
  DiffOptions o;
  o.root = *Selector::parse("name=step");
  DiffBuilder builder(o);
  {
    auto bt = std::make_unique<trace::EventTable>(base_trace());
    auto base = std::make_unique<ZoneTree>(*bt);
    ASSERT_TRUE(builder.add(*base));
    base.reset();
    bt.reset();
  }
  // Other text where the freed segments were, as later allocations would put there.
  std::vector<std::string> filler(64, std::string(64, 'x'));
  trace::EventTable ct = cand_trace();
  ZoneTree cand(ct);
  ASSERT_TRUE(builder.add(cand));
  EXPECT_FALSE(builder.add(cand));  // BASE and CAND only
  DiffResult streamed = builder.finish();
  trace::EventTable bt = base_trace();
  ZoneTree base(bt);
  auto both = analyze_diff(base, cand, o);
  ASSERT_TRUE(both);
  EXPECT_EQ(render_diff(o, streamed), render_diff(o, *both));
  EXPECT_EQ(row(streamed, "step/b").delta_ns(), 20);
}

}  // namespace
}  // namespace recur::analyze
