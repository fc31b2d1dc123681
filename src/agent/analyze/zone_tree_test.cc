// ZoneTree: parents, paths, self time and look-ups on hand-built tracks.
#include "analyze/zone_tree.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "analyze/analyze_test_util.h"

namespace recur::analyze {
namespace {

using testing::TraceBuilder;

// The zone of the first event with this name (and begin, when names repeat).
uint32_t find_zone(const ZoneTree& tree, std::string_view name, int64_t begin = -1) {
  for (uint32_t z = 0; z < tree.size(); ++z) {
    if (tree.table().name(tree.zone(z).event) == name && (begin < 0 || tree.zone(z).begin == begin)) return z;
  }
  ADD_FAILURE() << "no zone " << name;
  return kNoZone;
}

trace::EventTable nested_trace() {
  TraceBuilder b;
  uint32_t t1 = b.thread(1, 1, "main");
  uint32_t t2 = b.thread(1, 2);
  b.zone(t1, "mark", 50, 50);                    // zero length, at layer.1's begin
  b.zone(t1, "attention", 20, 30).arg("layer", 0);  // not keyed by its own name: no suffix
  b.zone(t1, "layer", 50, 90).arg("layer", 1);
  b.zone(t1, "step", 0, 100);
  b.zone(t1, "layer", 10, 50).arg("layer", 0);   // touches layer.1: a sibling
  b.zone(t2, "step", 5, 25);
  b.zone(t2, "layer", 5, 25).arg("layer", 0);    // same interval as its parent (file order)
  return b.finish();
}

TEST(ZoneTree, ParentsPathsAndSelfTime) {
  trace::EventTable t = nested_trace();
  ZoneTree tree(t);
  ASSERT_EQ(tree.size(), 7u);
  uint32_t step = find_zone(tree, "step", 0), l0 = find_zone(tree, "layer", 10), l1 = find_zone(tree, "layer", 50);
  uint32_t att = find_zone(tree, "attention"), mark = find_zone(tree, "mark");
  EXPECT_EQ(tree.zone(step).parent, kNoZone);
  EXPECT_EQ(tree.zone(l0).parent, step);
  EXPECT_EQ(tree.zone(l1).parent, step);
  EXPECT_EQ(tree.zone(att).parent, l0);
  EXPECT_EQ(tree.zone(mark).parent, l1);
  EXPECT_EQ(tree.zone(att).depth, 2u);
  EXPECT_EQ(tree.zone_path(step), "step");
  EXPECT_EQ(tree.zone_path(l0), "step/layer.0");
  EXPECT_EQ(tree.zone_path(att), "step/layer.0/attention");
  EXPECT_EQ(tree.zone_path(l1), "step/layer.1");
  EXPECT_EQ(tree.zone_path(mark), "step/layer.1/mark");
  EXPECT_EQ(tree.path(tree.path_parent(tree.zone(att).path)), "step/layer.0");
  EXPECT_EQ(tree.zone(step).self_ns, 100 - 40 - 40);
  EXPECT_EQ(tree.zone(l0).self_ns, 30);
  EXPECT_EQ(tree.zone(att).self_ns, 10);
  EXPECT_EQ(tree.zone(l1).self_ns, 40);
  EXPECT_EQ(tree.zone(mark).self_ns, 0);
  // Track 2 shares the path "step/layer.0" with track 1.
  uint32_t step2 = find_zone(tree, "step", 5), l02 = find_zone(tree, "layer", 5);
  EXPECT_EQ(tree.zone(l02).parent, step2);
  EXPECT_EQ(tree.zone(l02).path, tree.zone(l0).path);
  EXPECT_EQ(tree.zone(step2).self_ns, 0);
  EXPECT_EQ(tree.non_nesting(), 0u);
  EXPECT_EQ(tree.first_begin(), 0);
  EXPECT_EQ(tree.last_end(), 100);
  EXPECT_EQ(tree.zone_of_event(tree.zone(att).event), att);
}

TEST(ZoneTree, InnermostAtIsHalfOpen) {
  trace::EventTable t = nested_trace();
  ZoneTree tree(t);
  uint32_t track = t.track_for(1, 1);
  EXPECT_EQ(tree.innermost_at(track, 25), find_zone(tree, "attention"));
  EXPECT_EQ(tree.innermost_at(track, 30), find_zone(tree, "layer", 10));  // attention ended
  EXPECT_EQ(tree.innermost_at(track, 50), find_zone(tree, "layer", 50));  // mark has no length
  EXPECT_EQ(tree.innermost_at(track, 95), find_zone(tree, "step", 0));
  EXPECT_EQ(tree.innermost_at(track, 100), kNoZone);
  EXPECT_EQ(tree.innermost_at(track, -1), kNoZone);
  auto skip_layers = [&](const Zone& z) { return t.name(z.event) == "layer"; };
  EXPECT_EQ(tree.innermost_at(track, 40, skip_layers), find_zone(tree, "step", 0));
  EXPECT_EQ(tree.first_at_or_after(track, 31), find_zone(tree, "layer", 50));
  EXPECT_EQ(tree.first_at_or_after(track, 101), kNoZone);
}

TEST(ZoneTree, OverlapWithoutNestingIsCountedAndNeverAParent) {
  TraceBuilder b;
  uint32_t tr = b.thread(1, 1);
  b.zone(tr, "p", 0, 100);
  b.zone(tr, "c1", 10, 40);
  b.zone(tr, "c2", 30, 60);  // overlaps c1 without nesting: child of p
  b.zone(tr, "c3", 35, 38);  // inside c1 and c2: c1 is the innermost that nests
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  uint32_t p = find_zone(tree, "p"), c1 = find_zone(tree, "c1"), c2 = find_zone(tree, "c2"), c3 = find_zone(tree, "c3");
  EXPECT_EQ(tree.non_nesting(), 1u);
  EXPECT_EQ(tree.zone(c2).parent, p);
  EXPECT_EQ(tree.zone(c3).parent, c1);
  // p's children cover [10, 60) once, not 30 + 30.
  EXPECT_EQ(tree.zone(p).self_ns, 50);
  EXPECT_EQ(tree.zone(c1).self_ns, 27);
}

TEST(ZoneTree, StepNumbersAreDroppedFromPaths) {
  TraceBuilder b;
  uint32_t tr = b.thread(1, 1);
  b.zone(tr, "ProfilerStep#5", 0, 10);
  b.zone(tr, "Optimizer.zero_grad#SGD.zero_grad", 1, 2);
  b.zone(tr, "ProfilerStep#6", 10, 20);
  b.zone(tr, "#3", 11, 12);
  b.zone(tr, "ProfilerStep#", 20, 30);
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  EXPECT_EQ(tree.zone_path(find_zone(tree, "ProfilerStep#5")), "ProfilerStep");
  EXPECT_EQ(tree.zone(find_zone(tree, "ProfilerStep#5")).path, tree.zone(find_zone(tree, "ProfilerStep#6")).path);
  EXPECT_EQ(tree.zone_path(find_zone(tree, "Optimizer.zero_grad#SGD.zero_grad")),
            "ProfilerStep/Optimizer.zero_grad#SGD.zero_grad");
  EXPECT_EQ(tree.zone_path(find_zone(tree, "#3")), "ProfilerStep/#3");
  EXPECT_EQ(tree.zone_path(find_zone(tree, "ProfilerStep#")), "ProfilerStep#");
  EXPECT_EQ(zone_segment(t, tree.zone(find_zone(tree, "ProfilerStep#6")).event), "ProfilerStep");
}

TEST(ZoneTree, EmptyTableAndNonZoneEvents) {
  TraceBuilder b;
  uint32_t tr = b.thread(1, 1);
  b.flow(tr, 's', "f", 1, 10);
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  EXPECT_EQ(tree.size(), 0u);
  EXPECT_EQ(tree.zone_of_event(0), kNoZone);
  EXPECT_EQ(tree.innermost_at(tr, 10), kNoZone);
  EXPECT_EQ(tree.span_ns(), 0);
}

TEST(ZoneTree, PathsAnsweredFromSegments) {
  trace::EventTable t = nested_trace();
  ZoneTree tree(t);
  uint32_t att = tree.zone(find_zone(tree, "attention")).path;
  EXPECT_EQ(tree.path_segment(att), "attention");
  EXPECT_EQ(tree.path_depth(att), 3u);
  EXPECT_EQ(tree.path_length(att), std::string("step/layer.0/attention").size());
  for (std::string_view yes : {"attention", "layer.0/attention", "step/layer.0/attention"}) {
    EXPECT_TRUE(tree.path_ends_with(att, yes)) << yes;
  }
  for (std::string_view no : {"ttention", "/step/layer.0/attention", "x/step/layer.0/attention", "layer.0", "",
                              "ayer.0/attention", "step/layer.0/attention/"}) {
    EXPECT_FALSE(tree.path_ends_with(att, no)) << no;
  }
  // Path order: segment by segment, a path before its extensions.
  std::vector<uint32_t> rank = tree.path_order();
  std::vector<std::pair<uint32_t, std::string>> by_rank;
  for (uint32_t p = 1; p < tree.path_count(); ++p) by_rank.emplace_back(rank[p], tree.path(p));
  std::sort(by_rank.begin(), by_rank.end());
  std::vector<std::string> texts;
  for (auto& [r, text] : by_rank) texts.push_back(text);
  EXPECT_EQ(texts, (std::vector<std::string>{"step", "step/layer.0", "step/layer.0/attention", "step/layer.1",
                                             "step/layer.1/mark"}));
}

TEST(ZoneTree, NamesWithSlashesStillMatchWholeSegments) {
  TraceBuilder b;
  uint32_t tr = b.thread(1, 1);
  b.zone(tr, "a/b", 0, 10).zone(tr, "c", 1, 2);
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  uint32_t c = tree.zone(find_zone(tree, "c")).path;
  EXPECT_EQ(tree.path(c), "a/b/c");
  EXPECT_TRUE(tree.path_ends_with(c, "b/c"));  // as the text reads
  EXPECT_TRUE(tree.path_ends_with(c, "a/b/c"));
  EXPECT_FALSE(tree.path_ends_with(c, "/b/c"));
}

// 20,000 nested zones of one name: 20,000 distinct paths whose texts would total 400 MB.
// Interned, the tree holds one segment per path; look-ups jump rather than walk the chain.
TEST(ZoneTree, DeepNestingStaysLinear) {
  constexpr int64_t kDepth = 20000;
  TraceBuilder b;
  uint32_t tr = b.thread(1, 1);
  for (int64_t i = 0; i < kDepth; ++i) b.zone(tr, "f", i, 2 * kDepth - i);
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  ASSERT_EQ(tree.size(), size_t(kDepth));
  EXPECT_EQ(tree.path_count(), size_t(kDepth) + 1);
  uint32_t deepest = tree.zone(uint32_t(kDepth - 1)).path;
  EXPECT_EQ(tree.path_depth(deepest), uint32_t(kDepth));
  EXPECT_EQ(tree.path_length(deepest), uint64_t(2 * kDepth - 1));
  EXPECT_TRUE(tree.path_ends_with(deepest, "f/f/f"));
  EXPECT_EQ(tree.path(tree.zone(2).path), "f/f/f");
  EXPECT_EQ(tree.path_tail(deepest, 10), ".../f/f/f");  // 4 segments would need 11 bytes
  EXPECT_EQ(tree.path_tail(deepest, 11), ".../f/f/f/f");
  EXPECT_EQ(tree.path_tail(tree.zone(2).path, 5), "f/f/f");
  // innermost_at from the deepest zone: at time 2*kDepth - 1 - k only the k+1 outermost zones
  // still cover (zone i ends at 2*kDepth - i), so the answer is zone k.
  for (int64_t k : {int64_t(0), int64_t(1), int64_t(777), kDepth / 2, kDepth - 2, kDepth - 1}) {
    EXPECT_EQ(tree.innermost_at(tr, 2 * kDepth - 1 - k), uint32_t(k)) << k;
  }
  // Skipping: every zone of depth >= 100 skipped -> zone 99 wherever a deeper one covers.
  auto skip_deep = [](const Zone& z) { return z.depth >= 100; };
  EXPECT_EQ(tree.innermost_at(tr, kDepth, skip_deep), 99u);
  std::vector<uint32_t> rank = tree.path_order();
  for (uint32_t z = 1; z < 50; ++z) EXPECT_LT(rank[tree.zone(z - 1).path], rank[tree.zone(z).path]);
}

}  // namespace
}  // namespace recur::analyze
