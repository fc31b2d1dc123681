// The run report on a realistic synthetic run (report_sample.h): its sections, counts, escaping,
// charts, config diff and artifact links, asserted on the HTML it writes.
#include "report/report.h"

#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "report/report_sample.h"

namespace recur::agent {
namespace {

namespace fs = std::filesystem;

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + needle.size())) ++n;
  return n;
}

// The text of the element that starts at the first occurrence of `open_tag_prefix`, up to `close`.
std::string element(const std::string& html, const std::string& open_tag_prefix, const std::string& close) {
  size_t a = html.find(open_tag_prefix);
  if (a == std::string::npos) return "";
  size_t b = html.find(close, a);
  return html.substr(a, b == std::string::npos ? std::string::npos : b + close.size() - a);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/recur-report-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    auto sample = write_sample_run(dir_);
    ASSERT_TRUE(sample.has_value()) << sample.error().message();
    sample_ = *sample;
    auto j = Journal::open(sample_.journal_path, {.create = false});
    ASSERT_TRUE(j.has_value()) << j.error().message();
    journal_ = std::move(*j);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Writes a run's report and returns its HTML; result_ says what was written. A failure fails
  // the test and returns "".
  std::string report(const ReportOptions& options = {}, const std::string& run = kSampleRunName) {
    auto r = write_run_report(*journal_, run, options);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
    if (!r) return "";
    result_ = *r;
    return read_file(r->path);
  }

  std::string dir_;
  ReportResult result_;
  SampleRun sample_;
  std::unique_ptr<Journal> journal_;
};

TEST_F(ReportTest, WritesOnePageBesideTheJournalWithEverySection) {
  std::string html = report();
  const ReportResult* r = &result_;
  EXPECT_EQ(r->path, dir_ + "/kda-sample/report.html");
  EXPECT_EQ(html.size(), r->bytes);
  EXPECT_FALSE(fs::exists(r->path + ".tmp"));
  for (const char* id : {"summary", "timeline", "metrics", "decisions", "config", "artifacts"}) {
    EXPECT_EQ(count(html, fmt::format("id=\"{}\"", id)), 1u) << id;
  }
  EXPECT_EQ(r->counts.experiments, 7u);
  EXPECT_EQ(r->counts.keep, 2u);
  EXPECT_EQ(r->counts.revert, 1u);
  EXPECT_EQ(r->counts.none, 4u);
  EXPECT_EQ(r->counts.gate_evaluations, 3u);
  EXPECT_EQ(r->counts.gate_metrics, 2u);
  EXPECT_EQ(r->counts.artifacts, 6u);  // 3 gate specs, 2 traces, 1 report
  EXPECT_NEAR(r->counts.probe_cost_s, 6.0 + 3.2 + 1.9 + 2.4 + 5.0 + 3.9 + 5.2, 1e-9);
  // The summary: run, episode, outcome, elapsed from the run's own times, cost.
  EXPECT_NE(html.find("<span class=\"run-name\">kda-sample</span>"), std::string::npos);
  EXPECT_NE(html.find("<dd id=\"episode\">episodes/kda-replayssm.toml</dd>"), std::string::npos);
  EXPECT_NE(html.find("<dd id=\"state\">done: gate pass after 7 experiments</dd>"), std::string::npos);
  EXPECT_NE(html.find("<dd id=\"elapsed\">32.0 s</dd>"), std::string::npos);
  EXPECT_NE(html.find("<dd id=\"probe-cost\">27.6 s</dd>"), std::string::npos);
}

TEST_F(ReportTest, IsSelfContained) {
  std::string html = report();
  EXPECT_EQ(count(html, "<script"), 0u);  // no scripts at all, not even escaped-wrongly ones
  EXPECT_EQ(count(html, "<link"), 0u);
  EXPECT_EQ(count(html, " src="), 0u);
  EXPECT_EQ(count(html, "href=\"http"), 0u);
  EXPECT_EQ(count(html, "@import"), 0u);
  EXPECT_EQ(count(html, "url("), 0u);
}

TEST_F(ReportTest, EscapesTextFromTheJournal) {
  std::string html = report();
  const std::string escaped =
      "&lt;script&gt;document.body.setAttribute(&#39;data-pwned&#39;,&#39;1&#39;)&lt;/script&gt; &amp; "
      "&quot;quotes&quot; &#39;too&#39;";
  // The hypothesis of step 1: in the timeline's table and tooltip, the experiment's summary and
  // its Feedback.
  EXPECT_EQ(count(html, escaped), 4u);
  EXPECT_NE(html.find("prologue &lt; tiles &amp;&amp; tiles &gt; 0: &lt;b&gt;not bold&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(count(html, "<b>not bold"), 0u);
}

TEST_F(ReportTest, TimelineHasOneBarPerExperimentColouredByDecision) {
  std::string svg = element(report(), "<svg class=\"timeline\"", "</svg>");
  ASSERT_FALSE(svg.empty());
  EXPECT_EQ(count(svg, "<g class=\"tl-row\""), 7u);
  EXPECT_EQ(count(svg, "tl-bar decision-keep"), 2u);
  EXPECT_EQ(count(svg, "tl-bar decision-revert"), 1u);
  EXPECT_EQ(count(svg, "tl-bar decision-none"), 4u);
  for (int step = 0; step < 7; ++step) EXPECT_NE(svg.find(fmt::format("href=\"#step-{}\"", step)), std::string::npos);
  // Bars sit where their experiments ran on the 724 px axis from x = 220 over the 32 s run: step 0
  // starts 0.1 s in (220 + 0.1/32 * 724 = 222.3); step 6 runs from 26.1 s to 31.5 s (x = 810.5,
  // width 5.4/32 * 724 = 122.2) in the seventh row.
  EXPECT_NE(svg.find("tl-bar decision-none tier-2\" x=\"222.3\""), std::string::npos) << svg;
  EXPECT_NE(svg.find("tl-bar decision-none tier-3\" x=\"810.5\" y=\"149.0\" width=\"122.2\""), std::string::npos)
      << svg;
}

TEST_F(ReportTest, ChartsEachGateMetricWithItsCIsAndThreshold) {
  std::string html = report();
  EXPECT_EQ(count(html, "<figure class=\"metric\""), 2u);
  EXPECT_EQ(count(html, "<circle class=\"point\""), 6u);   // 2 metrics x 3 gate evaluations
  EXPECT_EQ(count(html, "<line class=\"ci\""), 6u);        // each with its CI
  EXPECT_EQ(count(html, "<line class=\"threshold\""), 2u);  // time_us <= 45, speedup >= 1.2
  EXPECT_EQ(count(html, "conditions_pass</code></figcaption>"), 0u);
  std::string time_us = element(html, "<figure class=\"metric\" id=\"metric-0\"", "</figure>");
  EXPECT_NE(time_us.find("<code>time_us(cand)</code> in us"), std::string::npos);
  EXPECT_NE(time_us.find("(condition: &lt;= 45)"), std::string::npos);
  EXPECT_NE(time_us.find("<title>step 0: 52.1 us [50.9, 53.4]</title>"), std::string::npos);
  EXPECT_NE(time_us.find("<td class=\"num\">40.2</td><td class=\"num\">[39.8, 40.7]</td>"), std::string::npos);
  std::string speedup = element(html, "<figure class=\"metric\" id=\"metric-1\"", "</figure>");
  EXPECT_NE(speedup.find("(condition: &gt;= 1.2)"), std::string::npos);
  EXPECT_NE(speedup.find("<title>step 6: 1.31 [1.27, 1.35]</title>"), std::string::npos);
}

TEST_F(ReportTest, EachExperimentShowsItsFeedback) {
  std::string html = report();
  EXPECT_EQ(count(html, "<details class=\"experiment"), 7u);
  EXPECT_EQ(count(html, "<details class=\"experiment decision-keep\""), 2u);
  EXPECT_EQ(count(html, "<div class=\"feedback\">"), 7u);
  std::string step1 = element(html, "<details class=\"experiment decision-none\" id=\"step-1\"", "</details>");
  ASSERT_FALSE(step1.empty());
  EXPECT_NE(step1.find("(a decomposition: the shares sum to 1)"), std::string::npos);
  EXPECT_EQ(count(step1, "<div class=\"attr-bar\""), 3u);
  EXPECT_NE(step1.find("style=\"width:46.0%\""), std::string::npos);
  EXPECT_NE(step1.find("<ul class=\"next\"><li>bench.kernel kda_decode variant=hoisted</li></ul>"), std::string::npos);
  std::string step3 = element(html, "id=\"step-3\"", "</details>");
  EXPECT_NE(step3.find("<code>engine.threads=4</code>"), std::string::npos);
  EXPECT_NE(step3.find("<td class=\"num\">1.12</td><td class=\"num\">[1.05, 1.2]</td>"), std::string::npos);
  EXPECT_NE(step3.find("<ul class=\"notes\"><li>2 vCPUs: oversubscribed</li></ul>"), std::string::npos);
}

TEST_F(ReportTest, ConfigDiffIsBasePlusKeptChanges) {
  std::string config = element(report(), "<section id=\"config\">", "</section>");
  EXPECT_NE(config.find("2 of 4 knobs changed"), std::string::npos);
  EXPECT_EQ(count(config, "<tr class=\"knob changed\""), 2u);
  EXPECT_NE(config.find("<tr class=\"knob changed\" data-knob=\"kernel.kda_decode.variant\"><td class=\"knob\">"
                        "kernel.kda_decode.variant</td><td class=\"value base\">vtile</td><td class=\"value final\">"
                        "hoisted</td><td><a href=\"#step-2\">step 2</a></td></tr>"),
            std::string::npos)
      << config;
  EXPECT_NE(config.find("data-knob=\"kernel.gemm.variant\"><td class=\"knob\">kernel.gemm.variant</td>"
                        "<td class=\"value base muted\">(default)</td><td class=\"value final\">avx2</td>"
                        "<td><a href=\"#step-5\">step 5</a></td>"),
            std::string::npos);
  // The reverted change is not in the final configuration.
  EXPECT_NE(config.find("<tr class=\"knob\" data-knob=\"engine.threads\"><td class=\"knob\">engine.threads</td>"
                        "<td class=\"value base\">2</td><td class=\"value final\">2</td>"),
            std::string::npos);
}

TEST_F(ReportTest, ArtifactLinksAreRelativeToTheReportsFolder) {
  std::string list = element(report(), "<ul class=\"artifact-list\">", "</ul>");
  // Relative to the journal's folder -> up one from DIR/kda-sample/.
  EXPECT_NE(list.find("href=\"../traces/gate0.trace.json\">traces/gate0.trace.json</a></li>"), std::string::npos)
      << list;
  // Absolute, with a space in the name.
  EXPECT_NE(list.find("href=\"../abs/step2%20trace.json\""), std::string::npos) << list;
  EXPECT_NE(list.find("href=\"missing-report.html\">kda-sample/missing-report.html</a> <span class=\"missing\">"
                      "(missing)</span>"),
            std::string::npos)
      << list;
  EXPECT_EQ(count(list, "(missing)"), 4u);  // the report and the 3 gate specs (relative to no spec folder here)
}

TEST_F(ReportTest, OutAnywhereKeepsLinksWorkingAndFindsRunsById) {
  const std::string out = dir_ + "/elsewhere/deeper/page.html";
  std::string html = report({.out = out}, "1");
  EXPECT_EQ(result_.path, out);
  EXPECT_EQ(result_.run.name, "kda-sample");
  EXPECT_NE(html.find("href=\"../../traces/gate0.trace.json\""), std::string::npos);
  EXPECT_NE(html.find("href=\"../../abs/step2%20trace.json\""), std::string::npos);
}

TEST_F(ReportTest, AnUnknownRunIsAnError) {
  auto r = write_run_report(*journal_, "no-such-run");
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("no-such-run"), std::string::npos) << r.error().message();
}

TEST_F(ReportTest, ARunInProgressShowsPendingStepsAndNoChartsYet) {
  auto run = journal_->begin_run("fresh", "episodes/x.toml", {});
  ASSERT_TRUE(run.has_value());
  ASSERT_TRUE(journal_->plan(run->id, 0, {.hypothesis = "h <0>", .probe = "bench.kernel", .tier = 2}).has_value());
  ASSERT_TRUE(journal_->start(run->id, 0).has_value());
  ASSERT_TRUE(journal_->plan(run->id, 1, {.hypothesis = "later", .probe = "gate", .tier = 2}).has_value());
  std::string html = report({}, "fresh");
  EXPECT_EQ(count(html, "tl-bar decision-pending"), 2u);
  EXPECT_EQ(count(html, "<details class=\"experiment decision-pending\""), 2u);
  EXPECT_NE(html.find("No gate evaluation yet."), std::string::npos);
  EXPECT_NE(html.find("No knobs set: the defaults throughout."), std::string::npos);
  EXPECT_NE(html.find("No artifacts recorded."), std::string::npos);
  EXPECT_NE(html.find("(so far)"), std::string::npos);
  EXPECT_NE(html.find("→ running"), std::string::npos);
  EXPECT_NE(html.find("→ planned"), std::string::npos);
}

}  // namespace
}  // namespace recur::agent
