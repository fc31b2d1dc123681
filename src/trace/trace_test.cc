// Record on several threads, write Chrome JSON, read it back (nlohmann) and check every event.
// Runs under ThreadSanitizer (`make tsan`): recording threads write while stats() reads.
#include "trace/trace.h"

#include <gtest/gtest.h>

#include <map>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace recur::trace {
namespace {

using nlohmann::json;

json record_and_parse(const std::function<void()>& body) {
  clear();
  start();
  body();
  stop();
  auto text = chrome_json();
  EXPECT_TRUE(text.has_value());
  return json::parse(*text);
}

std::vector<json> events_named(const json& trace, const std::string& name) {
  std::vector<json> out;
  for (const auto& e : trace["traceEvents"])
    if (e.value("name", "") == name) out.push_back(e);
  return out;
}

void nested_work(int layer) {
  RECUR_ZONE("layer");
  zone.arg("layer", layer);
  zone.arg("scale", 0.5);
  zone.arg("kind", "kda");
  {
    RECUR_ZONE("kda_decode");
    zone.arg("heads", 32);
  }
  counter("pages", double(layer));
}

TEST(Tracer, ZonesNestWithArgsAndSourceLocations) {
  json t = record_and_parse([] {
    set_thread_name("main");
    for (int l = 0; l < 3; ++l) nested_work(l);
    instant("done");
  });
  auto layers = events_named(t, "layer");
  auto kda = events_named(t, "kda_decode");
  ASSERT_EQ(layers.size(), 3u);
  ASSERT_EQ(kda.size(), 3u);
  for (int l = 0; l < 3; ++l) {
    const json& z = layers[size_t(l)];
    EXPECT_EQ(z["ph"], "X");
    EXPECT_EQ(z["args"]["layer"], l);
    EXPECT_EQ(z["args"]["scale"], 0.5);
    EXPECT_EQ(z["args"]["kind"], "kda");
    EXPECT_NE(z["args"]["src"].get<std::string>().find("trace_test.cc:"), std::string::npos);
    const json& inner = kda[size_t(l)];
    EXPECT_EQ(inner["args"]["heads"], 32);
    EXPECT_FALSE(inner["args"].contains("layer")) << "args attach to the innermost open zone";
    double b = z["ts"].get<double>(), e = b + z["dur"].get<double>();
    double ib = inner["ts"].get<double>(), ie = ib + inner["dur"].get<double>();
    EXPECT_LE(b, ib);
    EXPECT_LE(ie, e) << "inner zone must lie inside its parent";
    EXPECT_EQ(z["tid"], inner["tid"]);
  }
  auto counters = events_named(t, "pages");
  ASSERT_EQ(counters.size(), 3u);
  EXPECT_EQ(counters[2]["ph"], "C");
  EXPECT_EQ(counters[2]["args"]["pages"], 2.0);
  EXPECT_EQ(events_named(t, "done")[0]["ph"], "i");
  auto names = events_named(t, "thread_name");
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(names[0]["args"]["name"], "main");
  EXPECT_EQ(t["otherData"]["dropped_events"], 0);
}

TEST(Tracer, FlowsAndLocksAcrossThreads) {
  TracedMutex pool_lock("kv_pool");
  json t = record_and_parse([&] {
    std::thread producer([&] {
      set_thread_name("prefill");
      RECUR_ZONE("produce");
      flow_start(17, "kv_block");
      std::lock_guard<TracedMutex> g(pool_lock);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::thread consumer([&] {
      set_thread_name("kv_transfer");
      std::lock_guard<TracedMutex> g(pool_lock);  // waits for the producer
      RECUR_ZONE("send");
      flow_step(17, "kv_block");
      flow_end(17, "kv_block");
    });
    producer.join();
    consumer.join();
  });
  auto flows = events_named(t, "kv_block");
  ASSERT_EQ(flows.size(), 3u);
  std::map<std::string, json> by_ph;
  for (const auto& f : flows) by_ph[f["ph"]] = f;
  EXPECT_EQ(by_ph["s"]["id"], 17);
  EXPECT_EQ(by_ph["f"]["bp"], "e");
  EXPECT_NE(by_ph["s"]["tid"], by_ph["f"]["tid"]) << "a flow links two threads";

  auto holds = events_named(t, "hold kv_pool");
  auto waits = events_named(t, "wait kv_pool");
  ASSERT_EQ(holds.size(), 2u);
  ASSERT_EQ(waits.size(), 2u);
  const json* long_wait = nullptr;
  for (const auto& w : waits)
    if (w["dur"].get<double>() > 5000) long_wait = &w;
  ASSERT_NE(long_wait, nullptr) << "the consumer waited about 15 ms";
  EXPECT_EQ((*long_wait)["cat"], "lock");
  EXPECT_EQ((*long_wait)["args"]["holder_tid"], by_ph["s"]["tid"]) << "the holder is the producer";
}

TEST(Tracer, ManyThreadsRecordWithoutLossBelowTheCap) {
  constexpr int kThreads = 4, kZones = 10000;
  json t = record_and_parse([] {
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i)
      threads.emplace_back([] {
        for (int z = 0; z < kZones; ++z) {
          RECUR_ZONE("tick");
        }
        (void)stats();  // a concurrent reader, for TSan
      });
    for (auto& th : threads) th.join();
  });
  EXPECT_EQ(events_named(t, "tick").size(), size_t(kThreads * kZones));
  EXPECT_EQ(t["otherData"]["dropped_events"], 0);
}

TEST(Tracer, OverflowDropsAndCountsNeverSilently) {
  set_capacity(2 * 32 * 4096 + 64);  // two chunks
  json t = record_and_parse([] {
    for (int z = 0; z < 10000; ++z) {
      RECUR_ZONE("tick");
    }
  });
  set_capacity(size_t(256) << 20);
  Stats s = stats();
  EXPECT_GT(s.dropped, 0u);
  EXPECT_EQ(s.events + s.dropped, 20000u);
  EXPECT_EQ(t["otherData"]["dropped_events"], s.dropped);
  auto marks = events_named(t, "trace.dropped");
  ASSERT_EQ(marks.size(), 1u);
  EXPECT_EQ(marks[0]["args"]["count"], s.dropped);
}

TEST(Tracer, DisabledRecordsNothingAndOpenZonesAreMarked) {
  clear();
  {
    RECUR_ZONE("off");
    zone.arg("x", 1);
  }
  EXPECT_EQ(stats().events, 0u);
  start();
  static constexpr SourceLocation loc{"open", "f", "file.cc", 1};
  auto* open = new Zone(&loc);  // never closed before writing
  instant("after");
  stop();
  json t = json::parse(*chrome_json());
  auto z = events_named(t, "open");
  ASSERT_EQ(z.size(), 1u);
  EXPECT_EQ(z[0]["args"]["unclosed"], true);
  delete open;
}

}  // namespace
}  // namespace recur::trace
