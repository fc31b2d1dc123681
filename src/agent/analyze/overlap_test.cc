// overlap: shares, never-overlapped zones and their neighbours, touching and zero-length
// intervals, and grouping by rank, process and stream — all worked out by hand.
#include "analyze/overlap.h"

#include <gtest/gtest.h>

#include "analyze/analyze_test_util.h"
#include "trace/trace_tools.h"

namespace recur::analyze {
namespace {

using testing::TraceBuilder;

Selector sel(std::string_view text) {
  auto s = Selector::parse(text);
  EXPECT_TRUE(s) << s.error().to_string();
  return *s;
}

// A: kv_transfer [0,10) [20,30) [40,50) [60,60) [70,80); B: dispatch [5,15) [30,40) [45,50)
// [70,80). [30,40) touches A's [20,30) and [40,50) without overlapping them.
trace::EventTable transfer_trace() {
  TraceBuilder b;
  uint32_t tr = b.thread(1, 1, "kv");
  uint32_t moe = b.thread(1, 2, "moe");
  for (auto [lo, hi] : {std::pair{0, 10}, {20, 30}, {40, 50}, {60, 60}, {70, 80}}) b.zone(tr, "kv_transfer", lo, hi);
  for (auto [lo, hi] : {std::pair{5, 15}, {30, 40}, {45, 50}, {70, 80}}) b.zone(moe, "dispatch", lo, hi);
  return b.finish();
}

TEST(Overlap, SharesAndNeverOverlappedZones) {
  trace::EventTable t = transfer_trace();
  ZoneTree tree(t);
  OverlapOptions o;
  o.a = sel("name=kv_transfer");
  o.b = sel("name=dispatch");
  OverlapResult r = analyze_overlap(tree, o);
  ASSERT_EQ(r.groups.size(), 1u);
  const OverlapGroup& g = r.groups[0];
  EXPECT_EQ(g.a_busy_ns, 40);
  EXPECT_EQ(g.b_busy_ns, 35);
  EXPECT_EQ(g.overlap_ns, 5 + 5 + 10);
  EXPECT_DOUBLE_EQ(g.share(), 0.5);
  EXPECT_EQ(r.a_selected, 5u);  // the zero-length one is selected but has no busy time
  EXPECT_EQ(g.a_zones, 4u);
  EXPECT_EQ(g.full_zones, 1u);
  EXPECT_EQ(g.partial_zones, 2u);
  EXPECT_EQ(g.never_zones, 1u);
  EXPECT_EQ(g.never_ns, 10);
  ASSERT_EQ(r.never.size(), 1u);
  const NeverOverlapped& n = r.never[0];
  EXPECT_EQ(tree.zone(n.zone).begin, 20);
  EXPECT_EQ(tree.zone(n.prev_b).begin, 5);   // ended at 15, 5 ns before
  EXPECT_EQ(tree.zone(n.next_b).begin, 30);  // begins exactly at its end: touching is not overlap
  EXPECT_EQ(r.total.overlap_ns, 20);

  Feedback f = overlap_feedback(tree, o, r, "t.json");
  ASSERT_TRUE(validate_feedback(f)) << validate_feedback(f).error().to_string();
  EXPECT_EQ(f.probe, "analyze.overlap");
  EXPECT_DOUBLE_EQ(f.find_metric("overlap_share")->value, 0.5);
  ASSERT_EQ(f.attribution.size(), 4u);
  EXPECT_DOUBLE_EQ(f.attribution[0].share, 0.5);
  EXPECT_DOUBLE_EQ(f.attribution[1].share, 0.25);  // the never-overlapped [20,30)
  EXPECT_DOUBLE_EQ(f.attribution[2].share, 0.25);  // uncovered parts of [0,10) and [40,50)
  std::string text = render_overlap(tree, o, r);
  EXPECT_NE(text.find("50.0%"), std::string::npos) << text;
  EXPECT_NE(text.find("kv_transfer at +20 ns for 10 ns on kv (1/1); B: dispatch 5 ns before, dispatch 0 ns after"),
            std::string::npos)
      << text;
}

TEST(Overlap, ReversedRolesAndNothingSelected) {
  trace::EventTable t = transfer_trace();
  ZoneTree tree(t);
  OverlapOptions o;
  o.a = sel("name=dispatch");
  o.b = sel("name=kv_transfer");
  OverlapResult r = analyze_overlap(tree, o);
  EXPECT_EQ(r.total.a_busy_ns, 35);
  EXPECT_EQ(r.total.overlap_ns, 20);
  EXPECT_EQ(r.total.never_zones, 1u);  // [30,40) touches both neighbours, overlaps neither
  o.a = sel("name=nothing");
  r = analyze_overlap(tree, o);
  EXPECT_TRUE(r.groups.empty());
  Feedback f = overlap_feedback(tree, o, r, "t.json");
  EXPECT_TRUE(validate_feedback(f));
  EXPECT_TRUE(f.attribution.empty());
  ASSERT_FALSE(f.notes.empty());
  EXPECT_NE(f.notes[0].find("selected no zone"), std::string::npos);
}

TEST(Overlap, GroupsByRankProcessAndStream) {
  TraceBuilder b;
  const int64_t rank1 = int64_t(1) << trace::kRankPidShift;
  uint32_t r0 = b.thread(7, 7), r1 = b.thread(7 + rank1, 7);
  b.zone(r0, "comm", 0, 10).arg("stream", 3);
  b.zone(r1, "compute", 0, 10).arg("stream", 4);
  b.zone(r1, "comm", 20, 30).arg("stream", 3);
  b.zone(r1, "compute", 25, 40).arg("stream", 3);
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  OverlapOptions o;
  o.a = sel("name=comm");
  o.b = sel("name=compute");
  OverlapResult all = analyze_overlap(tree, o);
  EXPECT_EQ(all.total.a_busy_ns, 20);
  EXPECT_EQ(all.total.overlap_ns, 15);  // rank 1's compute at [0,10) overlaps rank 0's comm

  o.by = GroupBy::kRank;
  OverlapResult by_rank = analyze_overlap(tree, o);
  ASSERT_EQ(by_rank.groups.size(), 2u);
  EXPECT_EQ(by_rank.groups[0].label, "rank 0");
  EXPECT_EQ(by_rank.groups[0].overlap_ns, 0);
  EXPECT_EQ(by_rank.groups[0].never_zones, 1u);
  EXPECT_EQ(by_rank.groups[1].label, "rank 1");
  EXPECT_EQ(by_rank.groups[1].overlap_ns, 5);
  EXPECT_EQ(by_rank.total.overlap_ns, 5);
  EXPECT_EQ(by_rank.never[0].prev_b, kNoZone);  // rank 0 has no B at all
  EXPECT_EQ(by_rank.never[0].next_b, kNoZone);

  o.by = GroupBy::kProcess;
  EXPECT_EQ(analyze_overlap(tree, o).total.overlap_ns, 5);
  o.by = GroupBy::kStream;
  OverlapResult by_stream = analyze_overlap(tree, o);
  ASSERT_EQ(by_stream.groups.size(), 1u);  // only stream 3 holds A zones
  EXPECT_EQ(by_stream.groups[0].label, "stream 3");
  EXPECT_EQ(by_stream.groups[0].overlap_ns, 5);
  EXPECT_EQ(by_stream.total.b_busy_ns, 25);  // B on streams 3 and 4
  o.by = GroupBy::kTrack;
  EXPECT_EQ(analyze_overlap(tree, o).groups.size(), 2u);
}

TEST(Overlap, NestedAZonesCountOnce) {
  TraceBuilder b;
  uint32_t tr = b.thread(1, 1);
  b.zone(tr, "xfer", 0, 100);
  b.zone(tr, "xfer", 10, 20);  // nested in the first: adds no busy time
  b.zone(tr, "other", 50, 150);
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  OverlapOptions o;
  o.a = sel("name=xfer");
  o.b = sel("name=other");
  OverlapResult r = analyze_overlap(tree, o);
  EXPECT_EQ(r.total.a_busy_ns, 100);
  EXPECT_EQ(r.total.overlap_ns, 50);
  EXPECT_EQ(r.total.never_zones, 1u);  // [10,20)
  EXPECT_EQ(r.total.partial_zones, 1u);
}

TEST(GroupBy, ParsesNames) {
  EXPECT_EQ(*parse_group_by("thread"), GroupBy::kTrack);
  EXPECT_EQ(*parse_group_by("pid"), GroupBy::kProcess);
  EXPECT_EQ(parse_group_by("node").error().message(),
            "group by 'node': expected all, track, thread, process, pid, stream or rank");
}

}  // namespace
}  // namespace recur::analyze
