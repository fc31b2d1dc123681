// Runs under ThreadSanitizer in CI (`make tsan`): the tests write plain (non-atomic) memory from
// workers, so a missing happens-before edge in the pool or barrier is reported as a race.
#include "core/thread_pool.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "core/barrier.h"

namespace recur {
namespace {

std::unique_ptr<ThreadPool> make_pool(int threads, bool pin = false) {
  auto pool = ThreadPool::create({.threads = threads, .pin = pin});
  EXPECT_TRUE(pool.has_value());
  return std::move(*pool);
}

TEST(StaticChunk, CoversTheRangeExactlyAndIsBalanced) {
  for (int64_t n : {0, 1, 2, 7, 64, 1000, 1001}) {
    for (int parts : {1, 2, 3, 8, 13}) {
      int64_t expect_begin = 0;
      for (int i = 0; i < parts; ++i) {
        Range r = static_chunk(n, parts, i);
        EXPECT_EQ(r.begin, expect_begin) << n << "/" << parts << " chunk " << i;
        int64_t len = r.end - r.begin;
        EXPECT_TRUE(len == n / parts || len == n / parts + 1);
        expect_begin = r.end;
      }
      EXPECT_EQ(expect_begin, n);
    }
  }
  EXPECT_EQ(static_chunk(10, 3, 0).end, 4);  // the first n % parts chunks are one longer
  EXPECT_EQ(static_chunk(10, 3, 2).begin, 7);
}

TEST(ThreadPool, EveryIndexRunsExactlyOnceOnItsStaticWorker) {
  for (int threads : {1, 2, 3, 4}) {
    auto pool = make_pool(threads);
    ASSERT_EQ(pool->size(), threads);
    for (int64_t n : {1, 5, 1000, 4097}) {
      std::vector<int> hits(n, 0), owner(n, -1);
      pool->parallel_for(n, [&](int64_t b, int64_t e, int w) {
        for (int64_t i = b; i < e; ++i) {
          hits[i] += 1;  // plain writes: TSan flags overlapping chunks
          owner[i] = w;
        }
      });
      for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << "index " << i;
      for (int w = 0; w < threads; ++w) {
        Range r = static_chunk(n, threads, w);
        for (int64_t i = r.begin; i < r.end; ++i) ASSERT_EQ(owner[i], w);
      }
    }
  }
}

TEST(ThreadPool, ResultsAreVisibleToTheCallerAcrossManyRounds) {
  auto pool = make_pool(3);
  std::vector<int64_t> partial(3);
  for (int round = 0; round < 2000; ++round) {
    pool->parallel_for(300, [&](int64_t b, int64_t e, int w) {
      int64_t s = 0;
      for (int64_t i = b; i < e; ++i) s += i + round;
      partial[w] = s;
    });
    int64_t total = std::accumulate(partial.begin(), partial.end(), int64_t{0});
    ASSERT_EQ(total, 299 * 300 / 2 + 300 * round) << "round " << round;
  }
}

TEST(ThreadPool, NestedParallelForRunsInlineWithTheSamePartition) {
  auto pool = make_pool(2);
  std::vector<int> inner_hits(2 * 10, 0);
  pool->parallel_for(2, [&](int64_t b, int64_t, int) {
    pool->parallel_for(10, [&](int64_t ib, int64_t ie, int) {
      for (int64_t i = ib; i < ie; ++i) inner_hits[b * 10 + i] += 1;
    });
  });
  for (int h : inner_hits) EXPECT_EQ(h, 1);
}

TEST(ThreadPool, RunOnAllVisitsEachWorkerOnce) {
  auto pool = make_pool(4);
  std::vector<int> seen(4, 0);
  pool->run_on_all([&](int w) { seen[w] += 1; });
  for (int s : seen) EXPECT_EQ(s, 1);
}

TEST(ThreadPool, ClaimRunsEveryChunkExactlyOnceAcrossManyRoundsMixedWithStaticJobs) {
  for (int threads : {1, 2, 3, 4}) {
    auto pool = make_pool(threads);
    for (int round = 0; round < 120; ++round) {
      const int64_t chunks = 1 + (round * 7) % 41;
      std::vector<int> hits(size_t(chunks), 0), worker(size_t(chunks), -1);
      pool->parallel_claim(chunks, [&](int64_t c, int w) {
        hits[size_t(c)] += 1;  // plain writes: TSan flags a chunk run twice or read before the join
        worker[size_t(c)] = w;
      });
      for (int64_t c = 0; c < chunks; ++c) {
        ASSERT_EQ(hits[size_t(c)], 1) << "threads " << threads << " round " << round << " chunk " << c;
        ASSERT_GE(worker[size_t(c)], 0);
        ASSERT_LT(worker[size_t(c)], threads);
      }
      if (round % 3 == 0) {  // a static job in between: late claim workers must not disturb it
        std::vector<int> seen(64, 0);
        pool->parallel_for(64, [&](int64_t b, int64_t e, int) {
          for (int64_t i = b; i < e; ++i) seen[size_t(i)] += 1;
        });
        ASSERT_EQ(std::accumulate(seen.begin(), seen.end(), 0), 64);
      }
    }
  }
}

TEST(ThreadPool, ClaimInsideATaskRunsInlineAndEmptyClaimsReturn) {
  auto pool = make_pool(3);
  pool->parallel_claim(0, [](int64_t, int) { FAIL() << "no chunk to run"; });
  std::vector<int64_t> inner(3 * 5, 0);
  pool->parallel_for(3, [&](int64_t b, int64_t e, int) {
    for (int64_t i = b; i < e; ++i)
      pool->parallel_claim(5, [&, i](int64_t c, int w) {
        EXPECT_EQ(w, 0);  // inline on the task's thread
        inner[size_t(i * 5 + c)] += 1;
      });
  });
  for (int64_t v : inner) EXPECT_EQ(v, 1);
}

TEST(ThreadPool, PinsWorkersWhenAsked) {
  auto cpus = allowed_cpus();
  if (cpus.size() < 2) GTEST_SKIP() << "one CPU: nothing to pin";
  auto pool = make_pool(int(cpus.size()), /*pin=*/true);
  std::vector<int> ran_on(pool->size(), -1);
  for (int rep = 0; rep < 20; ++rep)
    pool->run_on_all([&](int w) { ran_on[w] = sched_getcpu(); });
  for (int w = 1; w < pool->size(); ++w) EXPECT_EQ(ran_on[w], pool->pinned_cpus()[w]) << "worker " << w;
  EXPECT_EQ(pool->pinned_cpus()[0], -1);
}

// Polling waits (spin_us) hand out the same jobs: static and claim jobs back to back, and after
// pauses longer than the spin, when the waits have fallen back to the futex. A pool with more
// threads than CPUs does not poll.
TEST(ThreadPool, SpinningWaitsRunEveryJobAndFallBackToSleeping) {
  const int cpus = int(allowed_cpus().size());
  auto pool = ThreadPool::create({.threads = std::min(cpus, 2), .pin = false, .spin_us = 300});
  ASSERT_TRUE(pool.has_value());
  EXPECT_TRUE((*pool)->spins());
  for (int round = 0; round < 600; ++round) {
    std::vector<int> hits(37, 0);
    (*pool)->parallel_claim(37, [&](int64_t c, int) { hits[size_t(c)] += 1; });
    ASSERT_EQ(std::accumulate(hits.begin(), hits.end(), 0), 37) << "round " << round;
    std::vector<int64_t> partial(size_t((*pool)->size()), 0);
    (*pool)->parallel_for(100, [&](int64_t b, int64_t e, int w) {
      for (int64_t i = b; i < e; ++i) partial[size_t(w)] += i;
    });
    ASSERT_EQ(std::accumulate(partial.begin(), partial.end(), int64_t{0}), 99 * 100 / 2) << "round " << round;
    if (round % 100 == 99) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the spin
  }
  auto crowded = ThreadPool::create({.threads = cpus + 2, .pin = false, .spin_us = 300});
  ASSERT_TRUE(crowded.has_value());
  EXPECT_FALSE((*crowded)->spins());
  std::vector<int> hits(50, 0);
  (*crowded)->parallel_claim(50, [&](int64_t c, int) { hits[size_t(c)] += 1; });
  EXPECT_EQ(std::accumulate(hits.begin(), hits.end(), 0), 50);
}

TEST(ThreadPool, RejectsBadSizes) {
  EXPECT_FALSE(ThreadPool::create({.threads = 2, .spin_us = -1}).has_value());
  EXPECT_FALSE(ThreadPool::create({.threads = -1}).has_value());
  EXPECT_FALSE(ThreadPool::create({.threads = 5000}).has_value());
  auto pool = ThreadPool::create({.threads = 0});
  ASSERT_TRUE(pool.has_value());
  EXPECT_EQ((*pool)->size(), int(allowed_cpus().size()));
}

TEST(Barrier, NoThreadPassesAPhaseEarly) {
  constexpr int kThreads = 3, kPhases = 500;
  auto pool = make_pool(kThreads);
  Barrier barrier(kThreads);
  std::vector<int> phase_of(kThreads, -1);
  std::vector<int> errors(kThreads, 0);
  pool->run_on_all([&](int w) {
    for (int p = 0; p < kPhases; ++p) {
      phase_of[w] = p;
      barrier.arrive_and_wait();
      for (int o = 0; o < kThreads; ++o)
        if (phase_of[o] != p) errors[w] += 1;  // someone ran ahead or lagged behind
      barrier.arrive_and_wait();
    }
  });
  for (int e : errors) EXPECT_EQ(e, 0);
}

}  // namespace
}  // namespace recur
