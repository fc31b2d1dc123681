// EventTable: interning, B/E pairing with the documented recovery rules, time order, append.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "trace/event_table.h"
#include "trace/test_util.h"

namespace recur::trace {
namespace {

TEST(StringPool, InternsAndKeepsViewsStable) {
  StringPool p;
  EXPECT_EQ(p.intern(""), 0u);
  StringId a = p.intern("alpha");
  std::string_view va = p.str(a);
  for (int i = 0; i < 20000; ++i) p.intern(fmt::format("s{}", i));
  EXPECT_EQ(p.intern("alpha"), a);
  EXPECT_EQ(p.str(a), "alpha");
  EXPECT_EQ(va.data(), p.str(a).data());
  EXPECT_EQ(p.find("s19999").has_value(), true);
  EXPECT_FALSE(p.find("missing"));
}

TEST(EventTable, PairsBeginEndPerTrackAndMergesArgs) {
  EventTable t;
  uint32_t a = t.track_for(1, 1), b = t.track_for(1, 2);
  StringId outer = t.strings().intern("outer"), inner = t.strings().intern("inner");
  StringId k = t.strings().intern("k"), e_arg = t.strings().intern("end_arg");
  t.add_event('B', outer, 0, 100, 0, a);
  t.add_arg_int(k, 1);
  t.add_event('B', outer, 0, 110, 0, b);  // other track: independent
  t.add_event('B', inner, 0, 120, 0, a);
  t.add_event('E', 0, 0, 130, 0, a);
  t.add_event('E', 0, 0, 200, 0, a);
  t.add_arg_int(e_arg, 2);
  t.add_event('E', 0, 0, 150, 0, b);
  t.finalize();
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t.describe(0), "X outer cat= ts=100 dur=100 pid=1 tid=1 id=0 flags=0 k=1 end_arg=2");
  EXPECT_EQ(t.describe(1), "X outer cat= ts=110 dur=40 pid=1 tid=2 id=0 flags=0");
  EXPECT_EQ(t.describe(2), "X inner cat= ts=120 dur=10 pid=1 tid=1 id=0 flags=0");
  EXPECT_EQ(t.info().unmatched_end_events, 0u);
  EXPECT_EQ(t.info().unclosed_begin_events, 0u);
}

TEST(EventTable, RecoversUnmatchedEndAndUnclosedBegin) {
  EventTable t;
  uint32_t a = t.track_for(1, 1);
  StringId n = t.strings().intern("n"), x = t.strings().intern("x");
  t.add_event('E', 0, 0, 50, 0, a);       // rule 1: no open B -> dropped, counted
  t.add_event('X', x, 0, 60, 500, a);     // the track's last end is 560
  t.add_event('B', n, 0, 70, 0, a);       // rule 2: never closed -> ends at 560
  t.finalize();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t.info().unmatched_end_events, 1u);
  EXPECT_EQ(t.info().unclosed_begin_events, 1u);
  EXPECT_EQ(t.describe(1), "X n cat= ts=70 dur=490 pid=1 tid=1 id=0 flags=0");
}

TEST(EventTable, SortsStablyByTimestampKeepingArgs) {
  EventTable t;
  uint32_t a = t.track_for(1, 1);
  StringId k = t.strings().intern("k");
  for (int i = 5; i > 0; --i) {
    t.add_event('i', t.strings().intern(fmt::format("e{}", i)), 0, i * 10, 0, a);
    t.add_arg_int(k, i);
  }
  t.add_event('i', t.strings().intern("tie"), 0, 10, 0, a);
  t.finalize();
  ASSERT_EQ(t.size(), 6u);
  EXPECT_EQ(t.name(0), "e1");
  EXPECT_EQ(t.int_arg(0, "k"), 1);
  EXPECT_EQ(t.name(1), "tie");  // equal ts: file order
  EXPECT_EQ(t.args_end(1), t.args_begin(1));
  EXPECT_EQ(t.name(5), "e5");
  EXPECT_EQ(t.int_arg(5, "k"), 5);
}

TEST(EventTable, LabelsGetStableSyntheticIds) {
  EventTable t;
  int64_t p1 = t.pid_for_label("Spans"), p2 = t.pid_for_label("Traces");
  EXPECT_NE(p1, p2);
  EXPECT_EQ(t.pid_for_label("Spans"), p1);
  EXPECT_GE(p1, kSyntheticIdBase);
  int64_t tid = t.tid_for_label(p1, "PyTorch Profiler");
  EXPECT_EQ(t.tid_for_label(p1, "PyTorch Profiler"), tid);
  EXPECT_EQ(t.str(t.find_process(p1)->label), "Spans");
}

TEST(EventTable, AppendShiftsPidsAndReinternsStrings) {
  EventTable a, b;
  uint32_t tb = b.track_for(7, 8);
  b.tracks()[tb].thread_name = b.strings().intern("worker");
  b.add_event('X', b.strings().intern("z"), b.strings().intern("c"), 5, 3, tb);
  b.add_arg_string(b.strings().intern("s"), "v");
  a.append(b, 1000);
  a.finalize();
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a.describe(0), "X z cat=c ts=5 dur=3 pid=1007 tid=8 id=0 flags=0 s=\"v\"");
  EXPECT_EQ(a.str(a.tracks()[a.track(0)].thread_name), "worker");
}

TEST(FormatUs, KeepsNanoseconds) {
  EXPECT_EQ(format_us(1234567), "1234.567");
  EXPECT_EQ(format_us(5), "0.005");
  EXPECT_EQ(format_us(-1500), "-1.500");
}

}  // namespace
}  // namespace recur::trace
