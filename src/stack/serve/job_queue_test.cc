#include "serve/job_queue.h"

#include <thread>

#include <gtest/gtest.h>

namespace recur::serve {
namespace {

std::shared_ptr<Job> job_with(int max_tokens) {
  PreparedRequest r;
  r.options.max_new_tokens = max_tokens;
  return std::make_shared<Job>(r, 0);
}

TEST(JobQueueTest, FifoAndBounded) {
  JobQueue q(2);
  EXPECT_TRUE(q.try_push(job_with(1)));
  EXPECT_TRUE(q.try_push(job_with(2)));
  EXPECT_FALSE(q.try_push(job_with(3)));  // full: the server answers 429
  EXPECT_EQ(q.depth(), 2u);
  EXPECT_EQ(q.pop()->request().options.max_new_tokens, 1);
  EXPECT_TRUE(q.try_push(job_with(4)));
  EXPECT_EQ(q.pop()->request().options.max_new_tokens, 2);
  EXPECT_EQ(q.pop()->request().options.max_new_tokens, 4);
}

TEST(JobQueueTest, TryPopIfTakesTheHeadOnlyWhenAdmitted) {
  JobQueue q(4);
  EXPECT_EQ(q.try_pop_if([](const Job&) { return true; }), nullptr) << "empty: null at once";
  ASSERT_TRUE(q.try_push(job_with(8)));
  ASSERT_TRUE(q.try_push(job_with(1)));
  auto small = [](const Job& j) { return j.request().options.max_new_tokens < 4; };
  EXPECT_EQ(q.try_pop_if(small), nullptr) << "the head does not fit: it waits, and nothing overtakes it";
  EXPECT_EQ(q.depth(), 2u);
  EXPECT_EQ(q.try_pop_if([](const Job&) { return true; })->request().options.max_new_tokens, 8);
  EXPECT_EQ(q.try_pop_if(small)->request().options.max_new_tokens, 1);
}

TEST(JobQueueTest, CloseDrainsThenWakesEveryWorker) {
  JobQueue q(4);
  ASSERT_TRUE(q.try_push(job_with(1)));
  std::atomic<int> got{0}, nulls{0};
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i)
    workers.emplace_back([&] {
      while (auto j = q.pop()) got.fetch_add(1);
      nulls.fetch_add(1);
    });
  q.close();
  for (auto& t : workers) t.join();
  EXPECT_EQ(got.load(), 1);
  EXPECT_EQ(nulls.load(), 3);
  EXPECT_FALSE(q.try_push(job_with(1)));
}

TEST(JobTest, UpdatesCarryAllTextThenTheResult) {
  auto job = job_with(1);
  std::thread worker([job] {
    for (int i = 0; i < 100; ++i) job->append("x");
    job->finish({"length", 3, 100, std::nullopt});
  });
  std::string text;
  std::optional<JobResult> result;
  while (!result) {
    Job::Update u = job->wait_update();
    text += u.text;
    result = u.result;
  }
  worker.join();
  EXPECT_EQ(text, std::string(100, 'x'));
  EXPECT_EQ(result->finish_reason, "length");
  EXPECT_EQ(result->completion_tokens, 100);
}

}  // namespace
}  // namespace recur::serve
