#include "journal/run_name.h"

#include <gtest/gtest.h>

namespace recur::agent {
namespace {

TEST(RunName, AcceptsEpisodeAndEvalNames) {
  for (const char* ok : {"kda-replayssm-3", "rms.builtin.r1-2", "A_b.9", "1"}) EXPECT_TRUE(check_run_name(ok, "--run")) << ok;
}

TEST(RunName, RefusesNamesThatLeaveTheFolder) {
  for (const char* bad : {"../../x", "/abs/path", "a/b", "..", ".", ".hidden", "-x", "", "a\\b", "a b", "x\n"}) {
    Status s = check_run_name(bad, "--run");
    ASSERT_FALSE(s) << bad;
    EXPECT_EQ(s.error().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(s.error().message().find("--run: "), std::string::npos) << s.error().message();
    EXPECT_NE(s.error().message().find("runs/NAME"), std::string::npos) << s.error().message();
  }
  EXPECT_FALSE(check_run_name(std::string(kMaxRunNameLength + 1, 'a'), "--run"));
  EXPECT_TRUE(check_run_name(std::string(kMaxRunNameLength, 'a'), "--run"));
}

}  // namespace
}  // namespace recur::agent
