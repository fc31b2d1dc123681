#include "core/child_process.h"

#include <gtest/gtest.h>

namespace recur {
namespace {

TEST(ChildProcess, CapturesStdoutStderrAndExitCode) {
  auto r = run_child({"/bin/sh", "-c", "echo out; echo err >&2; exit 3"}, {});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->out, "out\n");
  EXPECT_EQ(r->err_tail, "err\n");
  EXPECT_EQ(r->exit_code, 3);
  EXPECT_FALSE(r->timed_out);
  EXPECT_FALSE(r->truncated);
}

TEST(ChildProcess, KillsAtTheTimeLimitWithItsChildren) {
  // The grandchild holds the pipe open; killing the process group ends it too.
  auto r = run_child({"/bin/sh", "-c", "sleep 30 & sleep 30"}, {.timeout_s = 0.2});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->timed_out);
  EXPECT_LT(r->seconds, 5);
}

TEST(ChildProcess, StopsAtTheOutputLimit) {
  auto r = run_child({"/usr/bin/yes"}, {.timeout_s = 10, .max_stdout_bytes = 1000});
  ASSERT_TRUE(r);
  EXPECT_TRUE(r->truncated);
  EXPECT_EQ(r->out.size(), 1000u);
}

TEST(ChildProcess, EnvironmentOverridesReplaceAndAdd) {
  setenv("RECUR_CHILD_TEST_A", "parent", 1);
  auto r = run_child({"/bin/sh", "-c", "echo \"$RECUR_CHILD_TEST_A $RECUR_CHILD_TEST_B\"; env | grep -c RECUR_CHILD_TEST_A="},
                     {.env = {"RECUR_CHILD_TEST_A=child", "RECUR_CHILD_TEST_B=new"}});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->out, "child new\n1\n");  // replaced once, not appended twice
  unsetenv("RECUR_CHILD_TEST_A");
}

TEST(ChildProcess, MissingProgramIsAnError) {
  auto r = run_child({"/nonexistent/program"}, {});
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("/nonexistent/program"), std::string::npos);
}

}  // namespace
}  // namespace recur
