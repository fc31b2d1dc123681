// Tests the shim directly (g++ builds otherwise use std::expected), so the fuzz build's
// error paths behave like the standard's.
#include "core/expected_shim.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace recur::shim {
namespace {

expected<std::vector<std::string>, std::string> words(bool fail) {
  if (fail) return unexpected(std::string("bad"));
  return std::vector<std::string>{"a", "b"};
}

expected<void, int> maybe(bool fail) {
  if (fail) return unexpected(7);
  return {};
}

TEST(ExpectedShim, ValueAndErrorPaths) {
  auto ok = words(false);
  ASSERT_TRUE(ok.has_value());
  EXPECT_EQ(ok->size(), 2u);
  EXPECT_EQ((*ok)[1], "b");
  auto bad = words(true);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error(), "bad");
  EXPECT_EQ(bad.value_or(std::vector<std::string>{"z"}).front(), "z");

  EXPECT_TRUE(maybe(false).has_value());
  EXPECT_EQ(maybe(true).error(), 7);
}

TEST(ExpectedShim, CopyMoveAndAssignAcrossStates) {
  auto a = words(false);
  auto b = words(true);
  auto c = a;  // copy a value
  EXPECT_EQ(c->size(), 2u);
  c = b;  // value -> error
  ASSERT_FALSE(c.has_value());
  EXPECT_EQ(c.error(), "bad");
  c = std::move(a);  // error -> value
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->front(), "a");

  expected<std::unique_ptr<int>, std::string> p = std::make_unique<int>(5);
  auto q = std::move(p);
  EXPECT_EQ(**q, 5);
  std::unique_ptr<int> owned = *std::move(q);
  EXPECT_EQ(*owned, 5);

  auto v = maybe(true);
  auto w = v;
  EXPECT_EQ(w.error(), 7);
  w = maybe(false);
  EXPECT_TRUE(w.has_value());
}

}  // namespace
}  // namespace recur::shim
