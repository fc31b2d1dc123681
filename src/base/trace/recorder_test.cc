// Recording: zones with args, counters, instants, flows across threads, traced mutexes,
// thread names, runtime on/off, the per-thread cap with counted drops, and capture() while
// other threads record (this test also runs under ThreadSanitizer).
#include <unistd.h>

#include <atomic>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "trace/chrome_json.h"
#include "trace/test_util.h"
#include "trace/trace.h"
#include "trace/traced_mutex.h"

namespace recur::trace {
namespace {

class RecorderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    set_enabled(false);
    set_config(TraceConfig{});
    reset();
  }
  void TearDown() override {
    set_enabled(false);
    set_config(TraceConfig{});
    reset();
  }
};

std::vector<size_t> find(const EventTable& t, std::string_view name) {
  std::vector<size_t> v;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.name(i) == name) v.push_back(i);
  }
  return v;
}

TEST_F(RecorderTest, ZoneWithArgsCounterInstantAndThreadName) {
  set_enabled(true);
  set_thread_name("main-test");
  {
    RECUR_ZONE("outer");
    zone.arg("layer", 3).arg("ratio", 0.5).arg("ok", true).arg("kind", "decode");
    zone.arg("big", uint64_t(1) << 63);
    zone.arg("ignored_past_max", 1);  // the sixth arg is over kMaxZoneArgs
    {
      RECUR_ZONE_CAT(inner, "inner", "kernel");
      RECUR_COUNTER("free_blocks", 42);
      RECUR_COUNTER("load", 0.25);
      RECUR_INSTANT("tick");
    }
  }
  set_enabled(false);
  EventTable t = capture();
  auto outer = find(t, "outer");
  auto inner = find(t, "inner");
  ASSERT_EQ(outer.size(), 1u);
  ASSERT_EQ(inner.size(), 1u);
  size_t o = outer[0], n = inner[0];
  EXPECT_EQ(t.phase(o), 'X');
  EXPECT_EQ(t.cat(o), "recur");
  EXPECT_EQ(t.cat(n), "kernel");
  // inner nests in outer
  EXPECT_LE(t.ts_ns(o), t.ts_ns(n));
  EXPECT_GE(t.ts_ns(o) + t.dur_ns(o), t.ts_ns(n) + t.dur_ns(n));
  EXPECT_EQ(t.args_end(o) - t.args_begin(o), size_t(kMaxZoneArgs));
  EXPECT_EQ(t.int_arg(o, "layer"), 3);
  ASSERT_NE(t.find_arg(o, "ratio"), nullptr);
  EXPECT_EQ(t.find_arg(o, "ratio")->type, ArgType::kDouble);
  EXPECT_DOUBLE_EQ(t.find_arg(o, "ratio")->d, 0.5);
  EXPECT_EQ(t.find_arg(o, "ok")->type, ArgType::kBool);
  EXPECT_EQ(t.str(t.find_arg(o, "kind")->s), "decode");
  ASSERT_NE(t.find_arg(o, "big"), nullptr);
  EXPECT_EQ(t.find_arg(o, "big")->type, ArgType::kUint);
  EXPECT_EQ(t.find_arg(o, "big")->u, uint64_t(1) << 63);
  EXPECT_EQ(t.find_arg(o, "ignored_past_max"), nullptr);  // the sixth arg dropped
  auto c = find(t, "free_blocks");
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(t.phase(c[0]), 'C');
  EXPECT_EQ(t.int_arg(c[0], "value"), 42);
  auto l = find(t, "load");
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(t.find_arg(l[0], "value")->type, ArgType::kDouble);
  auto i = find(t, "tick");
  ASSERT_EQ(i.size(), 1u);
  EXPECT_EQ(t.phase(i[0]), 'i');
  EXPECT_EQ(t.str(t.tracks()[t.track(o)].thread_name), "main-test");
}

TEST_F(RecorderTest, DisabledRecordsNothing) {
  {
    RECUR_ZONE("off");
    zone.arg("x", 1);
    RECUR_COUNTER("c", 1);
    RECUR_FLOW_BEGIN("f", 1);
  }
  EventTable t = capture();
  EXPECT_EQ(t.size(), 0u);
  set_enabled(true);
  { RECUR_ZONE("on"); }
  set_enabled(false);
  { RECUR_ZONE("off_again"); }
  t = capture();
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t.name(0), "on");
}

TEST_F(RecorderTest, FlowLinksZonesOnThreeThreads) {
  set_enabled(true);
  std::atomic<int> stage{0};
  std::thread producer([&] {
    set_thread_name("prefill");
    RECUR_ZONE("produce");
    RECUR_FLOW_BEGIN("kv_block", 17);
    stage.store(1);
  });
  std::thread sender([&] {
    set_thread_name("kv_transfer");
    while (stage.load() < 1) std::this_thread::yield();
    RECUR_ZONE("send");
    RECUR_FLOW_STEP("kv_block", 17);
    stage.store(2);
  });
  std::thread receiver([&] {
    set_thread_name("decode");
    while (stage.load() < 2) std::this_thread::yield();
    RECUR_ZONE("receive");
    RECUR_FLOW_END("kv_block", 17);
  });
  producer.join();
  sender.join();
  receiver.join();
  set_enabled(false);
  EventTable t = capture();
  auto flows = find(t, "kv_block");
  ASSERT_EQ(flows.size(), 3u);
  EXPECT_EQ(t.phase(flows[0]), 's');
  EXPECT_EQ(t.phase(flows[1]), 't');
  EXPECT_EQ(t.phase(flows[2]), 'f');
  EXPECT_TRUE(t.flags(flows[2]) & kFlagBindEnclosing);
  for (size_t f : flows) EXPECT_EQ(t.id(f), 17u);
  // Each flow point lies inside its thread's zone.
  const char* zones[] = {"produce", "send", "receive"};
  const char* threads[] = {"prefill", "kv_transfer", "decode"};
  for (int k = 0; k < 3; ++k) {
    auto z = find(t, zones[k]);
    ASSERT_EQ(z.size(), 1u);
    EXPECT_EQ(t.track(z[0]), t.track(flows[size_t(k)]));
    EXPECT_EQ(t.str(t.tracks()[t.track(z[0])].thread_name), threads[k]);
    EXPECT_GE(t.ts_ns(flows[size_t(k)]), t.ts_ns(z[0]));
    EXPECT_LE(t.ts_ns(flows[size_t(k)]), t.ts_ns(z[0]) + t.dur_ns(z[0]));
  }
  EXPECT_NE(t.track(flows[0]), t.track(flows[2]));
}

TEST_F(RecorderTest, TracedMutexRecordsWaitAndHoldWithHolder) {
  set_enabled(true);
  TracedMutex mu("kv_pool");
  std::atomic<bool> held{false};
  std::atomic<int64_t> holder_tid{0};
  std::thread holder([&] {
    std::lock_guard lock(mu);
    holder_tid.store(int64_t(::gettid()));
    held.store(true);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  });
  while (!held.load()) std::this_thread::yield();
  { std::lock_guard lock(mu); }
  holder.join();
  set_enabled(false);
  EventTable t = capture();
  size_t waits = 0, holds = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.name(i) != "kv_pool") continue;
    ASSERT_EQ(t.phase(i), 'X');
    if (t.cat(i) == kLockWaitCategory) {
      ++waits;
      EXPECT_EQ(t.int_arg(i, "holder_tid"), holder_tid.load());
      EXPECT_GT(t.dur_ns(i), 1'000'000);  // waited for most of the 20 ms hold
      EXPECT_NE(t.tid(i), holder_tid.load());
    } else if (t.cat(i) == kLockHeldCategory) {
      ++holds;
    }
    EXPECT_EQ(t.str(t.find_arg(i, "mutex")->s), "kv_pool");
  }
  EXPECT_EQ(waits, 1u);
  EXPECT_EQ(holds, 2u);
}

TEST_F(RecorderTest, CapDropsAndCountsEventsAndTheTraceReportsThem) {
  set_config(TraceConfig{.max_events_per_thread = 100});
  set_enabled(true);
  std::thread th([] {
    set_thread_name("busy");
    for (int i = 0; i < 150; ++i) {
      RECUR_ZONE("z");
    }
  });
  th.join();
  set_enabled(false);
  EventTable t = capture();
  EXPECT_EQ(t.size(), 100u);
  EXPECT_EQ(t.info().dropped_events, 50u);
  // Written and read back, the count survives.
  auto back = testing::parse_json_text(chrome_json_string(t));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(back->info().dropped_events, 50u);
  bool found = false;
  for (const Track& tr : back->tracks()) {
    if (back->str(tr.thread_name) == "busy") {
      EXPECT_EQ(tr.dropped_events, 50u);
      found = true;
    }
  }
  EXPECT_TRUE(found);
}

TEST_F(RecorderTest, CaptureWhileThreadsRecord) {
  constexpr int kThreads = 4, kZones = 20000;
  set_enabled(true);
  std::atomic<int> done{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < kZones; ++i) {
        RECUR_ZONE("work");
        zone.arg("i", i).arg("thread", k);
      }
      done.fetch_add(1);
    });
  }
  size_t last = 0;
  while (done.load() < kThreads) {
    EventTable partial = capture();
    EXPECT_GE(partial.size(), last);  // events only accumulate
    last = partial.size();
    for (size_t i = 0; i < partial.size(); ++i) {
      ASSERT_EQ(partial.name(i), "work");
      ASSERT_EQ(partial.args_end(i) - partial.args_begin(i), 2u);
    }
  }
  for (auto& th : threads) th.join();
  set_enabled(false);
  EventTable t = capture();
  EXPECT_EQ(t.size(), size_t(kThreads) * kZones);
  EXPECT_EQ(t.info().dropped_events, 0u);
  EXPECT_EQ(t.tracks().size(), size_t(kThreads));
  // Per thread, the i args are exactly 0..kZones-1.
  std::vector<std::vector<uint8_t>> seen(kThreads, std::vector<uint8_t>(kZones, 0));
  for (size_t i = 0; i < t.size(); ++i) {
    int64_t k = *t.int_arg(i, "thread"), n = *t.int_arg(i, "i");
    ASSERT_TRUE(k >= 0 && k < kThreads && n >= 0 && n < kZones);
    EXPECT_EQ(seen[size_t(k)][size_t(n)]++, 0);
  }
}

TEST_F(RecorderTest, ResetClears) {
  set_enabled(true);
  { RECUR_ZONE("a"); }
  set_enabled(false);
  EXPECT_EQ(capture().size(), 1u);
  reset();
  EXPECT_EQ(capture().size(), 0u);
}

}  // namespace
}  // namespace recur::trace
