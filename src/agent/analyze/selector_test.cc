// Selectors: the text syntax, its errors (with columns), and matching every key.
#include "analyze/selector.h"

#include <gtest/gtest.h>

#include "analyze/analyze_test_util.h"
#include "trace/test_util.h"

namespace recur::analyze {
namespace {

std::string parse_error_of(std::string_view text) {
  auto s = Selector::parse(text);
  EXPECT_FALSE(s) << text;
  if (s) return "";
  EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
  return s.error().message();
}

TEST(Selector, ParsesTermsJoinedByCommas) {
  auto s = Selector::parse("name~^nccl,cat!=kernel,tid=3,stream=7,arg:layer=7,arg:External id,path~a\\,b,name~x{1,3}");
  ASSERT_TRUE(s) << s.error().to_string();
  ASSERT_EQ(s->terms().size(), 8u);
  EXPECT_EQ(s->terms()[0].key, SelectorKey::kName);
  EXPECT_EQ(s->terms()[0].op, SelectorOp::kMatch);
  EXPECT_EQ(s->terms()[1].op, SelectorOp::kNotEqual);
  EXPECT_EQ(s->terms()[1].column, 12u);
  EXPECT_EQ(s->terms()[2].number, 3);
  EXPECT_EQ(s->terms()[4].arg_key, "layer");
  EXPECT_EQ(s->terms()[5].arg_key, "External id");
  EXPECT_EQ(s->terms()[5].op, SelectorOp::kHas);
  EXPECT_EQ(s->terms()[6].value, "a,b");    // escaped comma
  EXPECT_EQ(s->terms()[7].value, "x{1,3}");  // comma inside braces of a regex
  EXPECT_TRUE(Selector::parse("*")->matches_everything());
}

TEST(Selector, ErrorsNameTheColumnAndWhatWasExpected) {
  EXPECT_EQ(parse_error_of("nam=x"),
            "selector 'nam=x': column 1: unknown key 'nam' (expected name, cat, thread, tid, pid, process, stream, "
            "arg:KEY or path)");
  EXPECT_NE(parse_error_of("cat=kernel,name~(").find("column 17: bad regex '('"), std::string::npos);
  EXPECT_EQ(parse_error_of("name"), "selector 'name': column 5: expected an operator (=, !=, ~ or !~) after 'name'");
  EXPECT_EQ(parse_error_of("name=a,,cat=b"), "selector 'name=a,,cat=b': column 8: empty term (expected KEY=VALUE, KEY~REGEX, ...)");
  EXPECT_EQ(parse_error_of("stream=x"), "selector 'stream=x': column 8: expected an integer stream id, got 'x'");
  EXPECT_EQ(parse_error_of("arg:=3"), "selector 'arg:=3': column 5: expected an arg key after 'arg:'");
  EXPECT_EQ(parse_error_of("name!x"), "selector 'name!x': column 5: expected an operator (=, !=, ~ or !~), got '!x'");
  EXPECT_EQ(parse_error_of(""), "selector '': empty (expected KEY=VALUE terms joined by commas, or *)");
  EXPECT_EQ(parse_error_of("name=a,"), "selector 'name=a,': column 8: empty term (expected KEY=VALUE, KEY~REGEX, ...)");
}

TEST(Selector, BadRegexNamesThePatternAndTheEnginesMessage) {
  // RE2's own wording after the pattern; no lookaround in a linear-time engine.
  EXPECT_EQ(parse_error_of("name~a(b"), "selector 'name~a(b': column 6: bad regex 'a(b': missing ): a(b");
  EXPECT_NE(parse_error_of("name~(?=x)").find("column 6: bad regex '(?=x)': invalid perl operator: (?="),
            std::string::npos);
}

// Names of the zones a selector picks, in zone order.
std::vector<std::string> picked(const ZoneTree& tree, std::string_view text) {
  auto s = Selector::parse(text);
  EXPECT_TRUE(s) << s.error().to_string();
  std::vector<std::string> out;
  if (!s) return out;
  ZoneMatcher m(*s, tree);
  for (uint32_t z : m.select()) out.push_back(std::string(tree.table().name(tree.zone(z).event)));
  return out;
}

TEST(Selector, MatchesEveryKey) {
  auto t = trace::testing::parse_json_text(R"({"traceEvents": [
    {"ph":"M","name":"process_name","pid":7,"args":{"name":"python"}},
    {"ph":"M","name":"thread_name","pid":7,"tid":1,"args":{"name":"main"}},
    {"ph":"X","name":"step","cat":"cpu_op","pid":7,"tid":1,"ts":0,"dur":100},
    {"ph":"X","name":"layer","cat":"cpu_op","pid":7,"tid":1,"ts":10,"dur":40,"args":{"layer":7}},
    {"ph":"X","name":"attention","cat":"cpu_op","pid":7,"tid":1,"ts":20,"dur":10,"args":{"layer":7,"kind":"gqa"}},
    {"ph":"X","name":"layer","cat":"cpu_op","pid":7,"tid":1,"ts":50,"dur":40,"args":{"layer":8}},
    {"ph":"X","name":"attention","cat":"cpu_op","pid":7,"tid":1,"ts":60,"dur":10,"args":{"layer":8,"scale":0.5}},
    {"ph":"X","name":"ncclKernel_AllReduce","cat":"kernel","pid":0,"tid":7,"ts":5,"dur":30,"args":{"stream":7}},
    {"ph":"X","name":"gemm","cat":"kernel","pid":0,"tid":"stream 20","ts":5,"dur":30,"args":{"stream":20}}
  ]})");
  ASSERT_TRUE(t) << t.error().to_string();
  ZoneTree tree(*t);
  using V = std::vector<std::string>;
  EXPECT_EQ(picked(tree, "name~^nccl"), V{"ncclKernel_AllReduce"});
  EXPECT_EQ(picked(tree, "cat=kernel,name!~^nccl"), V{"gemm"});
  EXPECT_EQ(picked(tree, "stream=7"), V{"ncclKernel_AllReduce"});
  EXPECT_EQ(picked(tree, "stream!=7,cat=kernel"), V{"gemm"});
  EXPECT_EQ(picked(tree, "tid=stream 20"), V{"gemm"});
  EXPECT_EQ(picked(tree, "tid=7"), V{"ncclKernel_AllReduce"});
  EXPECT_EQ(picked(tree, "thread=main,name=step"), V{"step"});
  EXPECT_EQ(picked(tree, "process=python,name=step"), V{"step"});
  EXPECT_EQ(picked(tree, "pid=0").size(), 2u);
  EXPECT_EQ(picked(tree, "arg:layer=7"), (V{"layer", "attention"}));
  EXPECT_EQ(picked(tree, "arg:layer=7.0,name=layer"), V{"layer"});  // numbers compare as numbers
  EXPECT_EQ(picked(tree, "arg:kind=gqa"), V{"attention"});
  EXPECT_EQ(picked(tree, "arg:scale~^0\\.5$"), V{"attention"});
  EXPECT_EQ(picked(tree, "arg:kind"), V{"attention"});
  EXPECT_EQ(picked(tree, "arg:kind!=gqa,name=attention"), V{"attention"});  // absent counts as not equal
  EXPECT_EQ(picked(tree, "path=layer.7/attention"), V{"attention"});
  EXPECT_EQ(picked(tree, "path=ayer.7/attention"), V{});  // whole segments only
  EXPECT_EQ(picked(tree, "path~^step/layer\\.[0-9]+/attention$"), (V{"attention", "attention"}));
  EXPECT_EQ(picked(tree, "path=step/layer.8"), V{"layer"});
  EXPECT_EQ(picked(tree, "*").size(), 7u);
  EXPECT_EQ(picked(tree, "name=nothing"), V{});
}

TEST(Selector, RegexOnALongNameRunsInLinearTime) {
  // std::regex recursed per character and overflowed the stack on names like these (Kineto
  // kernel names run to kilobytes; over MCP a model writes the pattern).
  testing::TraceBuilder b;
  uint32_t tr = b.thread(1, 1);
  std::string long_ab(100000, 'a');
  for (size_t i = 1; i < long_ab.size(); i += 2) long_ab[i] = 'b';
  b.zone(tr, long_ab + "c", 0, 10).zone(tr, long_ab, 20, 30).zone(tr, std::string(100000, 'y') + "x" + "y", 40, 50);
  trace::EventTable t = b.finish();
  ZoneTree tree(t);
  auto count = [&](std::string_view text) { return picked(tree, text).size(); };
  EXPECT_EQ(count("name~^(a|b)*c$"), 1u);
  EXPECT_EQ(count("name~(a|b)*c"), 1u);
  EXPECT_EQ(count("name~.*x.*"), 1u);
  EXPECT_EQ(count("name!~.*x.*"), 2u);
  EXPECT_EQ(count("path~^(a|b)+$"), 1u);
}

}  // namespace
}  // namespace recur::analyze
