// The UCX runtime's task queue (ucx_runtime.h): once it stops, nothing more runs, so run() must
// fail instead of waiting for a task nobody will run. Built only with UCX.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "transfer/transfer_test_util.h"
#include "transfer/ucx_runtime.h"

namespace recur::transfer {
namespace {

using namespace std::chrono_literals;

TEST(UcxRuntime, RunsTasksOnItsProgressThreadUntilStoppedThenRefusesThem) {
  auto rt = UcxRuntime::create(testing::unique_segment("ucxrt"));
  ASSERT_TRUE(rt.has_value()) << rt.error().to_string();
  bool on_progress = false;
  ASSERT_TRUE((*rt)->run([&] {
                     on_progress = (*rt)->on_progress_thread();
                     return ok_status();
                   })
                  .has_value());
  EXPECT_TRUE(on_progress);

  (*rt)->stop();
  (*rt)->stop();  // idempotent
  // Before the fix run() queued nothing and waited forever: bounded here so that fails, not hangs.
  // (A detached thread: a future of std::async would wait for it on destruction.)
  auto done = std::make_shared<std::promise<Status>>();
  std::future<Status> pending = done->get_future();
  std::thread([done, runtime = rt->get()] { done->set_value(runtime->run([] { return ok_status(); })); }).detach();
  ASSERT_EQ(pending.wait_for(10s), std::future_status::ready) << "run() on a stopped runtime did not return";
  const Status s = pending.get();
  ASSERT_FALSE(s.has_value());
  EXPECT_EQ(s.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(s.error().message().find("stopping"), std::string::npos) << s.error().message();
}

}  // namespace
}  // namespace recur::transfer
