// The report's small pieces: escaping, hrefs, number and time text, thresholds from condition
// text, and default paths.
#include <gtest/gtest.h>

#include "report/report.h"
#include "report/report_data.h"
#include "report/report_html.h"

namespace recur::agent {
namespace {

TEST(ReportHtml, EscapesEveryCharacterThatEndsTextOrAnAttribute) {
  EXPECT_EQ(html_escape("<script>a && b</script> \"q\" 'p'"),
            "&lt;script&gt;a &amp;&amp; b&lt;/script&gt; &quot;q&quot; &#39;p&#39;");
  EXPECT_EQ(html_escape("plain ü text"), "plain ü text");  // UTF-8 passes through
  EXPECT_EQ(html_escape(""), "");
}

TEST(ReportHtml, UrlPathEncodesWhatWouldBreakALink) {
  EXPECT_EQ(url_path("../traces/gate0.trace.json"), "../traces/gate0.trace.json");
  EXPECT_EQ(url_path("a b/c#d?e%f&g\"h"), "a%20b/c%23d%3Fe%25f%26g%22h");
  EXPECT_EQ(url_path("ü"), "%C3%BC");
}

TEST(ReportHtml, NumbersAndDurations) {
  EXPECT_EQ(number_text(41.2), "41.2");
  EXPECT_EQ(number_text(0.0031234), "0.003123");
  EXPECT_EQ(number_text(1.5e6), "1.5e+06");
  EXPECT_EQ(duration_text(0.84), "0.8 s");
  EXPECT_EQ(duration_text(185), "3 min 05 s");
  EXPECT_EQ(duration_text(7440), "2 h 04 min");
  EXPECT_EQ(duration_text(-1), "-");
  EXPECT_EQ(utc_time_text(1714568400), "2024-05-01 13:00:00 UTC");
}

TEST(ReportData, ThresholdFromASimpleClause) {
  auto t = condition_threshold("time_us(cand) <= 45", "time_us(cand)");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->first, 45);
  EXPECT_EQ(t->second, "<=");
  // Spaces do not matter; the number may come first (the operator is turned round).
  t = condition_threshold("1.2<speedup( cand vs ref )", "speedup(cand vs ref)");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->first, 1.2);
  EXPECT_EQ(t->second, ">");
  // The clause that names the metric, in a conjunction or disjunction.
  t = condition_threshold("check_pass(fast) and max_rel_err(fast vs ref) <= 2e-5", "max_rel_err(fast vs ref)");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->first, 2e-5);
  t = condition_threshold("speedup(fast vs ref) >= 1.5 or time_us(fast) <= 10", "time_us(fast)");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->first, 10);
  EXPECT_EQ(t->second, "<=");
}

TEST(ReportData, NoThresholdWhenTheOtherSideIsNotANumber) {
  EXPECT_FALSE(condition_threshold("prefill_tok_s(c) >= 0.95 * prefill_tok_s(b)", "prefill_tok_s(c)"));
  EXPECT_FALSE(condition_threshold("time_us(a) <= 45", "time_us(b)"));
  EXPECT_FALSE(condition_threshold("tokens_equal(tp4 vs tp1)", "tokens_equal(tp4 vs tp1)"));
  EXPECT_FALSE(condition_threshold("time_us(a) <= 45x", "time_us(a)"));
}

TEST(ReportData, GateChartMetricsLeaveOutTheConditionCounters) {
  EXPECT_TRUE(is_gate_chart_metric("time_us(cand)"));
  EXPECT_FALSE(is_gate_chart_metric("conditions_pass"));
  EXPECT_FALSE(is_gate_chart_metric("conditions_inconclusive"));
}

TEST(ReportData, HrefsFromAJournalAndAReportInTheCurrentFolder) {
  ExperimentRecord e;
  e.state = ExperimentState::kDone;
  e.decision = Decision::kNone;
  e.feedback = Feedback{.probe = "bench.kernel", .artifacts = {{"trace", "traces/t 1.json"}}};
  RunRecord run{.id = 1, .name = "r"};
  // Bare file names: their folder is the current one (never an empty path).
  ReportData here = build_report_data("journal.db", run, {e}, {}, "");
  ASSERT_EQ(here.artifacts.size(), 1u);
  EXPECT_EQ(here.artifacts[0].href, "traces/t%201.json");
  ReportData below = build_report_data("journal.db", run, {e}, {}, "r");
  EXPECT_EQ(below.artifacts[0].href, "../traces/t%201.json");
  ReportData absolute = build_report_data("/a/b/journal.db", run, {e}, {}, "/a/c/d");
  EXPECT_EQ(absolute.artifacts[0].href, "../../b/traces/t%201.json");
}

TEST(ReportData, GateMetricsWithAThresholdComeFirst) {
  ExperimentRecord e;
  e.state = ExperimentState::kDone;
  e.decision = Decision::kNone;
  e.spec.probe = "gate";
  Feedback f{.probe = "gate"};
  f.add_metric("check_pass(best)", 1);
  f.add_metric("conditions_pass", 1);
  f.add_metric("speedup(best vs scalar)", 5.5).ci95 = std::pair(5.3, 5.9);
  f.notes = {"gate pass: ...", "condition 1 pass: `check_pass(best)`", "condition 2 pass: `speedup(best vs scalar) >= 1.5`"};
  e.feedback = f;
  ReportData d = build_report_data("/j/journal.db", RunRecord{.id = 1, .name = "r"}, {e}, {}, "/j/r");
  ASSERT_EQ(d.gate_series.size(), 2u);  // the conditions_* counters are not charted
  EXPECT_EQ(d.gate_series[0].metric, "speedup(best vs scalar)");
  EXPECT_EQ(d.gate_series[0].threshold, 1.5);
  EXPECT_EQ(d.gate_series[1].metric, "check_pass(best)");
  EXPECT_FALSE(d.gate_series[1].threshold);
  EXPECT_EQ(d.counts.gate_evaluations, 1u);
}

TEST(Report, DefaultPathIsBesideTheJournalInTheRunsFolder) {
  EXPECT_EQ(default_report_path("runs/journal.db", "kda-1"), "runs/kda-1/report.html");
  EXPECT_EQ(default_report_path("journal.db", "kda-1"), "kda-1/report.html");
  EXPECT_EQ(default_report_path("/j/x.db", "a/b c"), "/j/a_b_c/report.html");
  EXPECT_EQ(default_report_path("/j/x.db", ".."), "/j/___/report.html");
}

}  // namespace
}  // namespace recur::agent
