// trace_stats and merge_traces.
#include <gtest/gtest.h>

#include "trace/test_util.h"
#include "trace/trace_tools.h"

namespace recur::trace {
namespace {

TEST(TraceStats, CountsSpanPhasesAndTopNames) {
  auto t = testing::parse_json_text(R"({"recurDroppedEvents": 4, "traceEvents": [
    {"ph":"X","name":"a","pid":1,"tid":1,"ts":10,"dur":5},
    {"ph":"X","name":"a","pid":1,"tid":2,"ts":12,"dur":5},
    {"ph":"X","name":"b","pid":1,"tid":1,"ts":20,"dur":30},
    {"ph":"i","name":"c","pid":2,"tid":1,"ts":100},
    {"ph":"E","pid":2,"tid":1,"ts":101}
  ]})");
  ASSERT_TRUE(t) << t.error().to_string();
  TraceStats s = trace_stats(*t, 2);
  EXPECT_EQ(s.events, 4u);
  EXPECT_EQ(s.tracks, 3u);
  EXPECT_EQ(s.processes, 2u);
  EXPECT_EQ(s.first_ts_ns, 10000);
  EXPECT_EQ(s.last_end_ns, 100000);
  EXPECT_EQ(s.span_ns(), 90000);
  EXPECT_EQ(s.phases['X'], 3u);
  EXPECT_EQ(s.phases['i'], 1u);
  ASSERT_EQ(s.top_names.size(), 2u);
  EXPECT_EQ(s.top_names[0].name, "b");
  EXPECT_EQ(s.top_names[1].name, "a");
  EXPECT_EQ(s.top_names[1].count, 2u);
  EXPECT_EQ(s.top_names[1].total_dur_ns, 10000);
  EXPECT_EQ(s.dropped_events, 4u);
  EXPECT_EQ(s.unmatched_end_events, 1u);
}

TEST(MergeTraces, KeepsRanksApart) {
  auto r0 = testing::parse_json_text(R"({"distributedInfo":{"rank":0,"world_size":2},"traceEvents":[
    {"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"python"}},
    {"ph":"X","name":"step","pid":7,"tid":7,"ts":1,"dur":2}]})");
  auto r1 = testing::parse_json_text(R"({"distributedInfo":{"rank":1,"world_size":2},"traceEvents":[
    {"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"python"}},
    {"ph":"X","name":"step","pid":7,"tid":7,"ts":1.5,"dur":2}]})");
  ASSERT_TRUE(r0 && r1);
  std::vector<EventTable> in;
  in.push_back(std::move(*r1));
  in.push_back(std::move(*r0));
  auto m = merge_traces(in);
  ASSERT_TRUE(m) << m.error().to_string();
  ASSERT_EQ(m->size(), 2u);
  EXPECT_EQ(m->pid(0), 7);
  EXPECT_EQ(m->pid(1), 7 + (int64_t(1) << kRankPidShift));
  EXPECT_EQ(m->ts_ns(1), 1500);
  EXPECT_EQ(m->str(m->find_process(7)->name), "rank 0 python");
  EXPECT_EQ(m->str(m->find_process(7 + (int64_t(1) << kRankPidShift))->name), "rank 1 python");
  EXPECT_EQ(m->info().world_size, 2);
  // The same rank twice is refused.
  std::vector<EventTable> dup;
  dup.push_back(std::move(*testing::parse_json_text(R"({"distributedInfo":{"rank":0},"traceEvents":[]})")));
  dup.push_back(std::move(*testing::parse_json_text(R"({"distributedInfo":{"rank":0},"traceEvents":[]})")));
  auto bad = merge_traces(dup);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("rank 0 appears twice"), std::string::npos);
}

}  // namespace
}  // namespace recur::trace
