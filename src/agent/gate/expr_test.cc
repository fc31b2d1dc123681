#include "gate/expr.h"

#include <gtest/gtest.h>

namespace recur::gate {
namespace {

std::string parsed(std::string_view text) {
  auto e = parse_expr(text, ExprSource{});
  if (!e) return "ERROR: " + e.error().message();
  return expr_to_string(*e);
}

std::string error_of(std::string_view text, ExprSource src = {"gate.toml", 7, 14, "condition 2"}) {
  auto e = parse_expr(text, src);
  EXPECT_FALSE(e.has_value()) << text;
  return e ? "" : e.error().message();
}

TEST(GateExpr, PrecedenceMulOverAddOverComparisonOverNotOverAndOverOr) {
  EXPECT_EQ(parsed("a(x) + b(x) * 2 >= 3 and c(x) < 1 or d(x) == 0"),
            "((((a(x) + (b(x) * 2)) >= 3) and (c(x) < 1)) or (d(x) == 0))");
  EXPECT_EQ(parsed("a(x) >= 1 or b(x) >= 2 and c(x) >= 3"), "((a(x) >= 1) or ((b(x) >= 2) and (c(x) >= 3)))");
  EXPECT_EQ(parsed("not a(x) >= 1 and b(x, y)"), "((not (a(x) >= 1)) and b(x vs y))");
  EXPECT_EQ(parsed("a(x) - b(x) - 1 > 0"), "(((a(x) - b(x)) - 1) > 0)");  // left-associative
  EXPECT_EQ(parsed("a(x) / b(x) / 2 > 0"), "(((a(x) / b(x)) / 2) > 0)");
  EXPECT_EQ(parsed("-a(x) * 2 > -1"), "(((-a(x)) * 2) > (-1))");
  EXPECT_EQ(parsed("(a(x) + 1) * 2 <= 4"), "(((a(x) + 1) * 2) <= 4)");
  EXPECT_EQ(parsed("a(x) >= 1 && b(x) != 2 || !c(x, y)"), "(((a(x) >= 1) and (b(x) != 2)) or (not c(x vs y)))");
}

TEST(GateExpr, CallsTakeArmsWithVsOrCommaAndQuotedStrings) {
  auto e = parse_expr("max_rel_err(tp4 vs tp1) <= 1e-4", ExprSource{});
  ASSERT_TRUE(e.has_value());
  ASSERT_EQ(e->op, ExprOp::kLe);
  EXPECT_EQ(e->lhs->name, "max_rel_err");
  ASSERT_EQ(e->lhs->args.size(), 2u);
  EXPECT_EQ(e->lhs->args[0].text, "tp4");
  EXPECT_EQ(e->lhs->args[1].text, "tp1");
  EXPECT_EQ(e->lhs->args[1].offset, 19u);
  EXPECT_DOUBLE_EQ(e->rhs->number, 1e-4);
  EXPECT_EQ(e->offset, 24u);  // the operator
  EXPECT_EQ(parsed("tokens_equal(candidate, baseline)"), "tokens_equal(candidate vs baseline)");
  EXPECT_EQ(parsed("zone_time_us(c, \"attention\") > 0"), "(zone_time_us(c, \"attention\") > 0)");
}

TEST(GateExpr, Numbers) {
  EXPECT_EQ(parsed("f(a) >= 0.95"), "(f(a) >= 0.95)");
  EXPECT_EQ(parsed("f(a) >= .5"), "(f(a) >= 0.5)");
  EXPECT_EQ(parsed("f(a) >= 2.5E+3"), "(f(a) >= 2500)");
  EXPECT_EQ(parsed("f(a) >= 1e-12"), "(f(a) >= 1e-12)");
}

TEST(GateExpr, ErrorsNameFileLineColumnAndWhatWasExpected) {
  // The expression starts at column 14 of line 7; offsets add to it.
  std::string m = error_of("prefill_tok_s(candidate >= 1");
  EXPECT_NE(m.find("gate.toml:7:38: condition 2: expected ')', ',' or 'vs' after 'candidate'"), std::string::npos) << m;
  EXPECT_NE(m.find("got '>='"), std::string::npos) << m;
  // The caret sits under the offending character.
  EXPECT_NE(m.find("\n    prefill_tok_s(candidate >= 1\n" + std::string(4 + 24, ' ') + "^"), std::string::npos) << m;

  m = error_of("prefill_tok_s(candidate) >= ");
  EXPECT_NE(m.find("gate.toml:7:42:"), std::string::npos) << m;
  EXPECT_NE(m.find("expected a number, a metric call"), std::string::npos) << m;
  EXPECT_NE(m.find("got the end of the condition"), std::string::npos) << m;

  m = error_of("f(a) >= 1 >= 2");
  EXPECT_NE(m.find("comparisons do not chain"), std::string::npos) << m;
  EXPECT_NE(m.find(":7:24:"), std::string::npos) << m;

  m = error_of("f(a) = 1");
  EXPECT_NE(m.find("expected '==' (or '>=', '<='), got a single '='"), std::string::npos) << m;
  m = error_of("f(a) >= 1e");
  EXPECT_NE(m.find("expected the digits of an exponent"), std::string::npos) << m;
  m = error_of("f() >= 1");
  EXPECT_NE(m.find("expected an arm name in the call of 'f', got ')'"), std::string::npos) << m;
  m = error_of("f >= 1");
  EXPECT_NE(m.find("expected '(' after the metric name 'f'"), std::string::npos) << m;
  m = error_of("(f(a) >= 1");
  EXPECT_NE(m.find("expected ')' to close the '(' at column 1"), std::string::npos) << m;
  m = error_of("f(a) >= 1 $");
  EXPECT_NE(m.find("unexpected character '$'"), std::string::npos) << m;
  m = error_of("f(a) >= 1.2.3");
  EXPECT_NE(m.find("'1.2.3' is not a number"), std::string::npos) << m;
  m = error_of("   ");
  EXPECT_NE(m.find("expected a condition, got an empty string"), std::string::npos) << m;
  m = error_of("f(a) >= 1 f(b)");
  EXPECT_NE(m.find("expected an operator, 'and', 'or' or the end"), std::string::npos) << m;
}

TEST(GateExpr, ErrorsWithoutAnExactColumnSayTheColumnInTheExpression) {
  std::string m = error_of("f(a) >= ", ExprSource{"g.toml", 9, 0, "condition 1"});
  EXPECT_NE(m.find("g.toml:9: condition 1 (column 9 of the expression):"), std::string::npos) << m;
}

}  // namespace
}  // namespace recur::gate
