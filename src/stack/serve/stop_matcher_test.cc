#include "serve/stop_matcher.h"

#include <gtest/gtest.h>

namespace recur::serve {
namespace {

// Feeds the pieces and returns everything sent, flushed at the end.
std::string run(StopMatcher& m, std::initializer_list<std::string_view> pieces) {
  std::string out;
  for (auto p : pieces) out += m.feed(p);
  return out + m.flush();
}

TEST(StopMatcherTest, NoStopsPassesEverythingThrough) {
  StopMatcher m({});
  EXPECT_EQ(m.feed("ab"), "ab");
  EXPECT_EQ(m.feed("c"), "c");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcherTest, CutsAtAStopSplitAcrossPieces) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.feed("hello E"), "hello ");  // "E" could start END: held
  EXPECT_EQ(m.feed("N"), "");
  EXPECT_EQ(m.feed("Dmore"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.feed("later"), "");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcherTest, HeldTextIsReleasedWhenItDoesNotMatch) {
  StopMatcher m({"END"});
  EXPECT_EQ(run(m, {"a E", "Nx", "y"}), "a ENxy");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcherTest, EarliestOfSeveralStopsWins) {
  StopMatcher m({"zz", "b"});
  EXPECT_EQ(run(m, {"aazzb"}), "aa");
  StopMatcher n({"zz", "b"});
  EXPECT_EQ(run(n, {"aabzz"}), "aa");
}

TEST(StopMatcherTest, HoldsAnUnfinishedUtf8Character) {
  StopMatcher m({});
  EXPECT_EQ(m.feed("a\xE2"), "a");  // the first byte of the 3-byte euro sign
  EXPECT_EQ(m.feed("\x82"), "");
  EXPECT_EQ(m.feed("\xAC"), "\xE2\x82\xAC");
  EXPECT_EQ(m.flush(), "");
}

TEST(StopMatcherTest, FlushReturnsAHeldPrefix) {
  StopMatcher m({"STOP"});
  EXPECT_EQ(m.feed("xST"), "x");
  EXPECT_EQ(m.flush(), "ST");
}

}  // namespace
}  // namespace recur::serve
