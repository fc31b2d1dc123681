#include "mcp/bounded_json.h"

#include <string>

#include <gtest/gtest.h>

namespace recur::mcp {
namespace {

TEST(BoundedJson, DepthIgnoresBracketsInStrings) {
  EXPECT_EQ(json_nesting_depth("1", 10), 0);
  EXPECT_EQ(json_nesting_depth("{\"a\":[1,{\"b\":2}]}", 10), 3);
  EXPECT_EQ(json_nesting_depth("[\"[[[[\\\"[[\"]", 10), 1);
}

TEST(BoundedJson, RejectsDeepNestingBeforeParsing) {
  Limits limits;
  limits.max_depth = 8;
  // A million brackets would overflow a recursive parser's stack; the pre-scan stops early.
  std::string deep(1000000, '[');
  auto r = parse_bounded(deep, {.max_line_bytes = 2000000, .max_depth = 8});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(r.error().message().find("deeper than 8"), std::string::npos) << r.error().message();
  EXPECT_TRUE(parse_bounded("[[[[[[[[1]]]]]]]]", limits));
  EXPECT_FALSE(parse_bounded("[[[[[[[[[1]]]]]]]]]", limits));
}

TEST(BoundedJson, RejectsOversizeAndMalformed) {
  auto big = parse_bounded(std::string(100, ' '), {.max_line_bytes = 10});
  ASSERT_FALSE(big);
  EXPECT_NE(big.error().message().find("limit of 10 bytes"), std::string::npos);
  auto bad = parse_bounded("{\"a\": }", {});
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code(), ErrorCode::kParse);
  EXPECT_NE(bad.error().message().find("byte 7"), std::string::npos) << bad.error().message();
  auto overflow = parse_bounded(R"({"id": 1e999999})", {});
  ASSERT_FALSE(overflow);
  EXPECT_EQ(overflow.error().code(), ErrorCode::kParse);
}

}  // namespace
}  // namespace recur::mcp
