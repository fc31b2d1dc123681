// Verdict logic on synthetic CIs: interval arithmetic, the pass/fail/inconclusive boundaries
// of comparisons, Kleene logic, and which condition decides the gate.
#include "gate/evaluate.h"

#include <cmath>
#include <limits>

#include <gtest/gtest.h>

#include "gate/metrics.h"

namespace recur::gate {
namespace {

MetricValue ci(double v, double lo, double hi) { return MetricValue{{v, lo, hi}, false, ""}; }
MetricValue truth(bool b) { return MetricValue{Interval::point(b ? 1 : 0), true, ""}; }

// Parses, checks against arms {c, b} (engine and kernel metrics allowed) and evaluates.
ConditionResult eval(std::string_view text, const MetricValues& values) {
  auto e = parse_expr(text, ExprSource{});
  EXPECT_TRUE(e.has_value()) << (e ? "" : e.error().message());
  std::vector<MetricRequest> requests;
  ConditionContext ctx{{"c", "b"}, true, true};
  auto s = check_condition(*e, text, ExprSource{}, ctx, requests);
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
  auto r = evaluate_condition(*e, text, values);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error().message());
  return r ? *r : ConditionResult{};
}

Outcome outcome(std::string_view text, const MetricValues& values) { return eval(text, values).outcome; }

TEST(GateInterval, ArithmeticCoversEveryValueOfTheOperands) {
  Interval a{2, 1, 3}, b{-1, -2, 4};
  Interval s = a + b, d = a - b, p = a * b;
  EXPECT_EQ(s.lo, -1);
  EXPECT_EQ(s.hi, 7);
  EXPECT_EQ(d.lo, 1 - 4);
  EXPECT_EQ(d.hi, 3 + 2);
  EXPECT_EQ(p.lo, -6);
  EXPECT_EQ(p.hi, 12);
  EXPECT_EQ(p.value, -2);
  Interval q = Interval{6, 4, 8} / Interval{2, 1, 4};
  EXPECT_EQ(q.value, 3);
  EXPECT_EQ(q.lo, 1);
  EXPECT_EQ(q.hi, 8);
  Interval z = Interval{1, 1, 1} / b;  // divisor straddles 0
  EXPECT_TRUE(std::isinf(z.lo) && z.lo < 0 && std::isinf(z.hi) && z.hi > 0);
  Interval n = -Interval{1, 0.5, 2};
  EXPECT_EQ(n.lo, -2);
  EXPECT_EQ(n.hi, -0.5);
}

// prefill(c) >= 0.95 * prefill(b): pass when lo(c) >= 0.95 hi(b), fail when hi(c) < 0.95 lo(b).
TEST(GateVerdict, RatioConditionBoundaries) {
  const char* cond = "prefill_tok_s(c) >= 0.5 * prefill_tok_s(b)";
  auto with = [&](MetricValue c, MetricValue b) {
    return outcome(cond, {{"prefill_tok_s(c)", c}, {"prefill_tok_s(b)", b}});
  };
  const MetricValue base = ci(190, 180, 200);  // 0.5 x [180, 200] = [90, 100]
  EXPECT_EQ(with(ci(120, 110, 130), base), Outcome::kPass);
  EXPECT_EQ(with(ci(105, 100, 110), base), Outcome::kPass);          // lo(c) == 0.5 hi(b): holds at the bound
  EXPECT_EQ(with(ci(104, 99.99, 110), base), Outcome::kInconclusive);  // just below the pessimistic end
  EXPECT_EQ(with(ci(88, 85, 90), base), Outcome::kInconclusive);     // hi(c) == 0.5 lo(b): not violated
  EXPECT_EQ(with(ci(80, 70, 89.99), base), Outcome::kFail);          // violated even optimistically
  EXPECT_EQ(with(ci(95, 60, 130), base), Outcome::kInconclusive);    // a wide CI straddles both ends
  // Point values (no CI) decide exactly.
  EXPECT_EQ(with(ci(95, 95, 95), ci(190, 190, 190)), Outcome::kPass);
  EXPECT_EQ(with(ci(94, 94, 94), ci(190, 190, 190)), Outcome::kFail);
}

TEST(GateVerdict, StrictAndNonStrictComparisonsAtTheBoundary) {
  MetricValues v{{"time_us(c)", ci(10, 8, 12)}};
  EXPECT_EQ(outcome("time_us(c) <= 12", v), Outcome::kPass);
  EXPECT_EQ(outcome("time_us(c) < 12", v), Outcome::kInconclusive);
  EXPECT_EQ(outcome("time_us(c) < 8", v), Outcome::kFail);
  EXPECT_EQ(outcome("time_us(c) <= 8", v), Outcome::kInconclusive);
  EXPECT_EQ(outcome("time_us(c) >= 8", v), Outcome::kPass);
  EXPECT_EQ(outcome("time_us(c) > 8", v), Outcome::kInconclusive);
  EXPECT_EQ(outcome("time_us(c) > 12", v), Outcome::kFail);
  EXPECT_EQ(outcome("time_us(c) == 10", v), Outcome::kInconclusive);
  EXPECT_EQ(outcome("time_us(c) == 13", v), Outcome::kFail);
  EXPECT_EQ(outcome("time_us(c) != 13", v), Outcome::kPass);
  MetricValues p{{"max_rel_err(c)", ci(0, 0, 0)}};
  EXPECT_EQ(outcome("max_rel_err(c) == 0", p), Outcome::kPass);
  EXPECT_EQ(outcome("max_rel_err(c) != 0", p), Outcome::kFail);
}

TEST(GateVerdict, ARatioMetricDividedByAnIntervalAroundZeroIsInconclusive) {
  MetricValues v{{"time_us(c)", ci(1, 0.5, 2)}, {"time_us(b)", ci(0.1, -0.1, 0.2)}};
  EXPECT_EQ(outcome("time_us(c) / time_us(b) <= 100", v), Outcome::kInconclusive);
}

TEST(GateVerdict, TruthMetricsAndKleeneLogic) {
  MetricValues v{{"tokens_equal(c vs b)", truth(true)},
                 {"check_pass(c)", truth(false)},
                 {"time_us(c)", ci(10, 8, 12)}};
  EXPECT_EQ(outcome("tokens_equal(c, b)", v), Outcome::kPass);
  EXPECT_EQ(outcome("check_pass(c)", v), Outcome::kFail);
  EXPECT_EQ(outcome("not check_pass(c)", v), Outcome::kPass);
  // and: fail dominates, then inconclusive; or: pass dominates, then inconclusive.
  EXPECT_EQ(outcome("tokens_equal(c, b) and time_us(c) <= 12", v), Outcome::kPass);
  EXPECT_EQ(outcome("tokens_equal(c, b) and time_us(c) <= 10", v), Outcome::kInconclusive);
  EXPECT_EQ(outcome("check_pass(c) and time_us(c) <= 10", v), Outcome::kFail);
  EXPECT_EQ(outcome("check_pass(c) or time_us(c) <= 10", v), Outcome::kInconclusive);
  EXPECT_EQ(outcome("check_pass(c) or time_us(c) <= 12", v), Outcome::kPass);
  EXPECT_EQ(outcome("check_pass(c) or time_us(c) > 12", v), Outcome::kFail);
  EXPECT_EQ(outcome("not (time_us(c) <= 10)", v), Outcome::kInconclusive);
  ConditionResult r = eval("tokens_equal(c, b) and time_us(c) <= 12", v);
  ASSERT_EQ(r.details.size(), 2u);
  EXPECT_EQ(r.details[0], "tokens_equal(c vs b) = true");
  EXPECT_NE(r.details[1].find("time_us(c) 10 [8, 12] <= 12: pass"), std::string::npos) << r.details[1];
}

TEST(GateVerdict, AMissingMeasurementIsAnError) {
  auto e = parse_expr("time_us(c) <= 1", ExprSource{});
  ASSERT_TRUE(e.has_value());
  auto r = evaluate_condition(*e, "time_us(c) <= 1", {});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().message().find("no measurement of time_us(c)"), std::string::npos);
}

ConditionResult result(Outcome o, double slack, std::string text) {
  ConditionResult r;
  r.outcome = o;
  r.slack = slack;
  r.text = std::move(text);
  return r;
}

TEST(GateVerdict, TheDecidingCondition) {
  // Fail: the first failing condition decides, even after an inconclusive one.
  GateVerdict v = decide_gate({result(Outcome::kPass, 0.1, "a"), result(Outcome::kInconclusive, -0.01, "b"),
                               result(Outcome::kFail, -0.5, "c"), result(Outcome::kFail, -0.9, "d")});
  EXPECT_EQ(v.outcome, Outcome::kFail);
  EXPECT_EQ(v.deciding, 2);
  EXPECT_NE(v.reason.find("failed by condition 3 `c`"), std::string::npos) << v.reason;
  // Inconclusive: none failed; the first inconclusive decides.
  v = decide_gate({result(Outcome::kPass, 0.1, "a"), result(Outcome::kInconclusive, -0.01, "b"),
                   result(Outcome::kInconclusive, -0.2, "c")});
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_EQ(v.deciding, 1);
  // Pass: all pass; the tightest (least slack) decides.
  v = decide_gate({result(Outcome::kPass, 0.3, "a"), result(Outcome::kPass, 0.02, "b"),
                   result(Outcome::kPass, std::numeric_limits<double>::infinity(), "c")});
  EXPECT_EQ(v.outcome, Outcome::kPass);
  EXPECT_EQ(v.deciding, 1);
  EXPECT_NE(v.reason.find("all 3 conditions pass; the tightest is condition 2 `b`"), std::string::npos) << v.reason;
  // Nothing to decide.
  v = decide_gate({});
  EXPECT_EQ(v.outcome, Outcome::kInconclusive);
  EXPECT_EQ(v.deciding, -1);
}

TEST(GateVerdict, SlackIsRelativeAtThePessimisticEnd) {
  MetricValues v{{"decode_tok_s(c)", ci(100, 96, 104)}, {"decode_tok_s(b)", ci(100, 98, 102)}};
  ConditionResult r = eval("decode_tok_s(c) >= 0.9 * decode_tok_s(b)", v);
  EXPECT_EQ(r.outcome, Outcome::kPass);
  EXPECT_NEAR(r.slack, (96 - 0.9 * 102) / 100, 1e-12);
}

}  // namespace
}  // namespace recur::gate
