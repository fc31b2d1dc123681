#include "mcp/schema_check.h"

#include <gtest/gtest.h>

namespace recur::mcp {
namespace {

using nlohmann::json;

const json kSchema = {
    {"type", "object"},
    {"properties",
     {{"kernel", {{"type", "string"}, {"maxLength", 8}}},
      {"budget_s", {{"type", "number"}, {"minimum", 0.1}, {"maximum", 10}}},
      {"runs", {{"type", "integer"}}},
      {"mode", {{"enum", {"a", "b"}}}},
      {"set", {{"type", "array"}, {"items", {{"type", "string"}}}, {"maxItems", 2}}}}},
    {"required", {"kernel"}},
    {"additionalProperties", false}};

std::string error_of(const json& v) {
  auto s = check_against_schema(v, kSchema);
  return s ? std::string() : s.error().message();
}

TEST(SchemaCheck, AcceptsValidArguments) {
  EXPECT_EQ(error_of({{"kernel", "rmsnorm"}, {"budget_s", 2}, {"runs", 3.0}, {"mode", "a"}, {"set", {"x=1"}}}), "");
}

TEST(SchemaCheck, NamesThePathAndWhatWasExpected) {
  EXPECT_EQ(error_of(json::object()), "arguments: missing required property 'kernel'");
  EXPECT_EQ(error_of({{"kernel", 12}}), "arguments.kernel: expected a string, got 12");
  EXPECT_EQ(error_of({{"kernel", "k"}, {"runs", 1.5}}), "arguments.runs: expected an integer, got 1.5");
  EXPECT_EQ(error_of({{"kernel", "k"}, {"budget_s", 50}}), "arguments.budget_s: 50 is above the maximum 10");
  EXPECT_EQ(error_of({{"kernel", "k"}, {"mode", "c"}}), "arguments.mode: \"c\" is not one of [\"a\",\"b\"]");
  EXPECT_EQ(error_of({{"kernel", "k"}, {"set", {"a", 1}}}), "arguments.set[1]: expected a string, got 1");
  EXPECT_EQ(error_of({{"kernel", "k"}, {"set", {"a", "b", "c"}}}), "arguments.set: expected at most 2 items, got 3");
  EXPECT_EQ(error_of({{"kernel", "much too long"}}), "arguments.kernel: longer than 8 characters");
  EXPECT_NE(error_of({{"kernel", "k"}, {"evil", true}}).find("arguments.evil: unknown property"), std::string::npos);
}

}  // namespace
}  // namespace recur::mcp
