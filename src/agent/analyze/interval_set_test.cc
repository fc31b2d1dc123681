// IntervalSet: hand-checked edge cases (touching, zero-length, nested) and random sets checked
// against a brute-force bitmap over a small time axis.
#include "analyze/interval_set.h"

#include <gtest/gtest.h>

#include <bitset>
#include <random>

namespace recur::analyze {
namespace {

using Ivs = std::vector<Interval>;

TEST(IntervalSet, TouchingIntervalsMergeButDoNotOverlap) {
  IntervalSet a(Ivs{{0, 5}, {5, 9}});
  EXPECT_EQ(a.intervals(), (Ivs{{0, 9}}));
  EXPECT_EQ(a.length(), 9);
  IntervalSet left(Ivs{{0, 5}}), right(Ivs{{5, 9}});
  EXPECT_TRUE(left.intersect(right).empty());
  EXPECT_EQ(left.overlap_length({5, 9}), 0);
  EXPECT_EQ(left.subtract(right), left);
  EXPECT_EQ(left.unite(right).length(), 9);
}

TEST(IntervalSet, ZeroLengthAndReversedIntervalsAddNothing) {
  IntervalSet a(Ivs{{3, 3}, {7, 2}, {10, 12}});
  EXPECT_EQ(a.intervals(), (Ivs{{10, 12}}));
  a.add(11, 11);
  a.add(20, 20);
  EXPECT_EQ(a.size(), 1u);
  EXPECT_EQ(a.overlap_length({11, 11}), 0);
  EXPECT_EQ(IntervalSet(Ivs{{4, 4}}).length(), 0);
  EXPECT_TRUE(IntervalSet(Ivs{{4, 4}}).empty());
  // A zero-length interval never cuts a set.
  EXPECT_EQ(a.subtract(IntervalSet(Ivs{{11, 11}})), a);
  EXPECT_EQ(a.clip({11, 11}).length(), 0);
}

TEST(IntervalSet, NestedIntervalsCountOnce) {
  IntervalSet a(Ivs{{0, 100}, {10, 20}, {30, 40}, {35, 38}});
  EXPECT_EQ(a.intervals(), (Ivs{{0, 100}}));
  EXPECT_EQ(a.length(), 100);
  IntervalSet inner(Ivs{{10, 20}, {30, 40}});
  EXPECT_EQ(a.intersect(inner), inner);
  EXPECT_EQ(a.subtract(inner).intervals(), (Ivs{{0, 10}, {20, 30}, {40, 100}}));
  EXPECT_EQ(inner.subtract(a).length(), 0);
}

TEST(IntervalSet, AddOutOfOrderAndOverlapping) {
  IntervalSet a;
  a.add(10, 20);
  a.add(30, 40);
  a.add(15, 25);  // before the last begin: slow path
  a.add(0, 5);
  a.add(38, 50);  // extends the last
  a.add(50, 55);  // touches the last
  EXPECT_EQ(a.intervals(), (Ivs{{0, 5}, {10, 25}, {30, 55}}));
  EXPECT_EQ(a, IntervalSet(Ivs{{38, 50}, {0, 5}, {30, 40}, {10, 20}, {15, 25}, {50, 55}}));
}

TEST(IntervalSet, SpanClipAndOverlapLength) {
  IntervalSet a(Ivs{{0, 10}, {20, 30}, {40, 50}});
  EXPECT_EQ(a.span(), (Interval{0, 50}));
  EXPECT_EQ(IntervalSet().span(), (Interval{0, 0}));
  EXPECT_EQ(a.overlap_length({5, 45}), 5 + 10 + 5);
  EXPECT_EQ(a.overlap_length({10, 20}), 0);
  EXPECT_EQ(a.overlap_length({-100, 100}), 30);
  EXPECT_EQ(a.clip({5, 25}).intervals(), (Ivs{{5, 10}, {20, 25}}));
}

TEST(IntervalSet, EmptyOperands) {
  IntervalSet a(Ivs{{1, 4}});
  IntervalSet e;
  EXPECT_EQ(a.unite(e), a);
  EXPECT_EQ(e.unite(a), a);
  EXPECT_TRUE(a.intersect(e).empty());
  EXPECT_EQ(a.subtract(e), a);
  EXPECT_TRUE(e.subtract(a).empty());
  EXPECT_EQ(e.length(), 0);
}

// The reference: a bitmap over [0, kAxis), bit t set when [t, t+1) is covered.
constexpr int kAxis = 96;
using Bits = std::bitset<kAxis>;

Bits bits_of(const Ivs& ivs) {
  Bits b;
  for (const Interval& iv : ivs)
    for (int64_t t = std::max<int64_t>(iv.begin, 0); t < std::min<int64_t>(iv.end, kAxis); ++t) b.set(size_t(t));
  return b;
}

// The normal form the bitmap implies: maximal runs of set bits.
Ivs runs_of(const Bits& b) {
  Ivs out;
  for (int t = 0; t < kAxis;) {
    if (!b.test(size_t(t))) {
      ++t;
      continue;
    }
    int u = t;
    while (u < kAxis && b.test(size_t(u))) ++u;
    out.push_back({t, u});
    t = u;
  }
  return out;
}

Ivs random_intervals(std::mt19937& rng, int max_count) {
  std::uniform_int_distribution<int> count(0, max_count), pos(0, kAxis), len(0, 12);
  Ivs v(size_t(count(rng)));
  for (Interval& iv : v) {
    iv.begin = pos(rng);
    iv.end = std::min(kAxis, int(iv.begin) + len(rng));  // zero lengths included
  }
  return v;
}

TEST(IntervalSet, RandomSetsMatchBitmapReference) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 2000; ++round) {
    Ivs ra = random_intervals(rng, 10), rb = random_intervals(rng, 10);
    IntervalSet a(ra), b;
    for (const Interval& iv : rb) b.add(iv);  // the incremental path, in random order
    Bits ba = bits_of(ra), bb = bits_of(rb);
    ASSERT_EQ(a.intervals(), runs_of(ba)) << "round " << round;
    ASSERT_EQ(b.intervals(), runs_of(bb)) << "round " << round;
    ASSERT_EQ(a.length(), int64_t(ba.count()));
    ASSERT_EQ(a.unite(b).intervals(), runs_of(ba | bb)) << "round " << round;
    ASSERT_EQ(a.intersect(b).intervals(), runs_of(ba & bb)) << "round " << round;
    ASSERT_EQ(a.subtract(b).intervals(), runs_of(ba & ~bb)) << "round " << round;
    ASSERT_EQ(b.subtract(a).intervals(), runs_of(bb & ~ba)) << "round " << round;
    Interval w{int64_t(rng() % kAxis), int64_t(rng() % kAxis)};
    if (w.end < w.begin) std::swap(w.begin, w.end);
    Bits bw = bits_of({w});
    ASSERT_EQ(a.clip(w).intervals(), runs_of(ba & bw)) << "round " << round;
    ASSERT_EQ(a.overlap_length(w), int64_t((ba & bw).count())) << "round " << round;
  }
}

}  // namespace
}  // namespace recur::analyze
