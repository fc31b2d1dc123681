// The pieces the reports share: text tables, fitted cells, durations and labels.
#include <gtest/gtest.h>

#include "analyze/analyze_test_util.h"
#include "analyze/report_util.h"
#include "analyze/text_table.h"
#include "analyze/trace_labels.h"
#include "trace/trace_tools.h"

namespace recur::analyze {
namespace {

TEST(TextTable, PadsAlignsAndFitsLongCells) {
  TextTable t({"name", ">time"});
  t.add_row({"a", "1 ns"});
  t.add_row({"longer", "12.500 us"});
  EXPECT_EQ(t.render(), "  name         time\n  a            1 ns\n  longer  12.500 us\n");
  EXPECT_EQ(fit("abcdefghij", 7), "ab...ij");
  EXPECT_EQ(fit("abc", 7), "abc");
  TextTable wide({"x"});
  wide.add_row({std::string(300, 'k')});
  EXPECT_EQ(wide.render(0).size(), 2 + TextTable::kMaxCell + 1);
}

TEST(TraceLabels, DurationsThreadsAndRanks) {
  EXPECT_EQ(format_ns(850), "850 ns");
  EXPECT_EQ(format_ns(12500), "12.500 us");
  EXPECT_EQ(format_ns(3250000), "3.250 ms");
  EXPECT_EQ(format_ns(-1200000000), "-1.200 s");
  EXPECT_EQ(format_delta_ns(20), "+20 ns");
  EXPECT_EQ(format_delta_ns(-20000), "-20.000 us");
  testing::TraceBuilder b;
  uint32_t named = b.thread(7, 8, "prefill"), plain = b.thread(7 + (int64_t(3) << trace::kRankPidShift), 9);
  trace::EventTable t = b.finish();
  EXPECT_EQ(thread_label(t, named), "prefill (7/8)");
  EXPECT_EQ(thread_text(t, plain), "9");
  EXPECT_EQ(rank_of_pid(t, 7), 0);
  EXPECT_EQ(rank_of_pid(t, t.tracks()[plain].pid), 3);
  t.info().rank = 5;
  EXPECT_EQ(rank_of_pid(t, 7), 5);  // an unmerged trace: its distributedInfo rank
}

TEST(ReportUtil, DecompositionKeepsTheTopAndSumsTheRest) {
  Feedback f = analysis_feedback("x", "s");
  set_decomposition(f, {{"a", 0.5, ""}, {"b", 0.3, ""}, {"c", 0.1, ""}}, 1, "parts", 0.1, "rest");
  ASSERT_EQ(f.attribution.size(), 3u);
  EXPECT_EQ(f.attribution[1].component, "(2 more parts)");
  EXPECT_DOUBLE_EQ(f.attribution[1].share, 0.4);
  EXPECT_EQ(f.attribution[2].component, "unattributed");
  EXPECT_TRUE(validate_feedback(f));
  EXPECT_EQ(f.probe, "analyze.x");
}

}  // namespace
}  // namespace recur::analyze
