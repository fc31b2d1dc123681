#include "core/status.h"

#include <gtest/gtest.h>

namespace recur {
namespace {

Result<int> parse_positive(int x) {
  if (x <= 0) return invalid_argument("value {} at position {}: expected > 0", x, 3);
  return x;
}

Result<int> doubled(int x) {
  RECUR_ASSIGN_OR_RETURN(int v, parse_positive(x));
  return 2 * v;
}

Status check_all(int a, int b) {
  RECUR_RETURN_IF_ERROR(parse_positive(a));
  RECUR_RETURN_IF_ERROR(parse_positive(b));
  return ok_status();
}

TEST(Status, PropagatesErrorsWithMessages) {
  EXPECT_EQ(*doubled(4), 8);
  auto bad = doubled(-1);
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().code(), ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().message(), "value -1 at position 3: expected > 0");
  EXPECT_EQ(bad.error().to_string(), "invalid argument: value -1 at position 3: expected > 0");
  EXPECT_EQ(bad.error().with_context("x.toml").message(), "x.toml: value -1 at position 3: expected > 0");
  EXPECT_TRUE(check_all(1, 2).has_value());
  EXPECT_FALSE(check_all(1, 0).has_value());
}

}  // namespace
}  // namespace recur
