#include "core/spawn.h"

#include <signal.h>

#include <gtest/gtest.h>

namespace recur {
namespace {

TEST(Spawn, ReportsExitCodesAndProgramsThatCannotStart) {
  auto ok = spawn_child({.argv = {"sh", "-c", "exit 3"}});
  ASSERT_TRUE(ok) << ok.error().message();
  auto code = ok->wait();
  ASSERT_TRUE(code);
  EXPECT_EQ(*code, 3);

  auto missing = spawn_child({.argv = {"/nonexistent/program"}});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().code(), ErrorCode::kIo);
  EXPECT_NE(missing.error().message().find("cannot run '/nonexistent/program'"), std::string::npos)
      << missing.error().message();
}

TEST(Spawn, AChildLeftUnwaitedIsKilledWithItsGroup) {
  pid_t pid = 0;
  {
    auto c = spawn_child({.argv = {"sleep", "30"}, .own_process_group = true});
    ASSERT_TRUE(c) << c.error().message();
    pid = c->pid();
    auto running = c->poll();
    ASSERT_TRUE(running);
    EXPECT_EQ(*running, -1);
  }
  EXPECT_NE(::kill(pid, 0), 0) << "the destructor kills and reaps";
}

}  // namespace
}  // namespace recur
