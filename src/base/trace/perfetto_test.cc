// Perfetto protobuf: record -> write -> read round trips, HTA traces through protobuf and back,
// the wire format checked independently with `protoc --decode_raw`, and malformed input.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "trace/chrome_json.h"
#include "trace/perfetto.h"
#include "trace/perfetto_trace.pb.h"
#include "trace/test_util.h"
#include "trace/trace.h"
#include "trace/trace_io.h"
#include "trace/traced_mutex.h"

namespace recur::trace {
namespace {

using testing::event_lines;
using testing::track_lines;

EventTable record_sample() {
  set_enabled(false);
  reset();
  set_config(TraceConfig{.max_events_per_thread = 12});
  set_enabled(true);
  set_thread_name("main");
  TracedMutex mu("pool");
  {
    RECUR_ZONE("step");
    zone.arg("layer", -3).arg("frac", 0.125).arg("name", "decode").arg("flag", true);
    RECUR_FLOW_BEGIN("kv", 5);
    RECUR_COUNTER("blocks", 9);
    RECUR_COUNTER("util", 0.75);
    RECUR_INSTANT("mark");
    std::lock_guard lock(mu);
  }
  std::thread other([] {
    set_thread_name("other");
    {
      RECUR_ZONE_CAT(z, "recv", "io");
      z.arg("bytes", uint64_t(1) << 40);
      RECUR_FLOW_STEP("kv", 5);
      { RECUR_ZONE("nested"); }
    }
    { RECUR_ZONE("done"); RECUR_FLOW_END("kv", 5); }
    for (int i = 0; i < 20; ++i) { RECUR_ZONE("overflow"); }  // past the cap of 12
  });
  other.join();
  set_enabled(false);
  set_config(TraceConfig{});
  EventTable t = capture();
  reset();
  return t;
}

PaddedBytes as_bytes(const std::string& s) { return testing::bytes_of(s); }

TEST(Perfetto, RoundTripsRecordedEvents) {
  EventTable t = record_sample();
  EXPECT_GT(t.info().dropped_events, 0u);
  auto pb = perfetto_bytes(t);
  ASSERT_TRUE(pb) << pb.error().to_string();
  auto back = parse_trace("rt.pftrace", as_bytes(*pb));
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(event_lines(*back), event_lines(t));
  EXPECT_EQ(track_lines(*back), track_lines(t));
  EXPECT_EQ(back->info().dropped_events, t.info().dropped_events);
  // JSON -> protobuf -> JSON is stable too.
  EXPECT_EQ(chrome_json_string(*back), chrome_json_string(t));
}

std::string run_capture(const std::string& cmd) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(Perfetto, ProtocDecodesTheFieldNumbersOfTheFormat) {
  EventTable t = record_sample();
  std::string path = ::testing::TempDir() + "/recur_trace.pftrace";
  ASSERT_TRUE(write_trace(t, path));
  std::string raw = run_capture(std::string(RECUR_PROTOC) + " --decode_raw < " + path);
  ASSERT_FALSE(raw.empty()) << "protoc --decode_raw failed";
  // Trace.packet = 1; TracePacket.track_descriptor = 60 with uuid = 1 and process = 3 (pid = 1);
  // thread = 4 with tid = 2 and thread_name = 5; track_event = 11 with type = 9,
  // track_uuid = 11, name_iid = 10; interned_data = 12 with event_names = 2 {iid = 1, name = 2};
  // timestamp = 8; trusted_packet_sequence_id = 10; sequence_flags = 13.
  EXPECT_NE(raw.find("1 {\n  10: 1\n  13: 1\n  60 {\n    1: 1\n    3 {\n      1: "), std::string::npos)
      << raw.substr(0, 400);
  EXPECT_NE(raw.find("      5: \"main\""), std::string::npos);
  EXPECT_NE(raw.find("  11 {\n"), std::string::npos);
  EXPECT_NE(raw.find("  12 {\n    2 {\n      1: "), std::string::npos);
  EXPECT_NE(raw.find("      2: \"step\""), std::string::npos);
  EXPECT_NE(raw.find("  13: 1\n"), std::string::npos);
  EXPECT_NE(raw.find("  10: 1\n"), std::string::npos);
  // And decoding with our .proto names the same fields.
  std::string proto_dir = std::string(RECUR_SOURCE_DIR) + "/src/base/trace";
  std::string named = run_capture(std::string(RECUR_PROTOC) + " -I" + proto_dir +
                                  " --decode=recur.perfetto.Trace perfetto_trace.proto < " + path);
  EXPECT_NE(named.find("track_descriptor {"), std::string::npos);
  EXPECT_NE(named.find("thread_name: \"other\""), std::string::npos);
  EXPECT_NE(named.find("type: TYPE_SLICE_BEGIN"), std::string::npos);
  EXPECT_NE(named.find("type: TYPE_COUNTER"), std::string::npos);
  EXPECT_NE(named.find("terminating_flow_ids: 5"), std::string::npos);
  EXPECT_NE(named.find("name: \"recur_dropped_events\""), std::string::npos);
  std::filesystem::remove(path);
}

TEST(Perfetto, HtaTracesSurviveProtobuf) {
  std::string dir = RECUR_HTA_TESTDATA;
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no HTA test data at " << dir;
  for (const char* rel : {"trace_filter/sampled_rank-1.json.gz",
                          "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz",
                          "amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"}) {
    SCOPED_TRACE(rel);
    auto json = read_trace(dir + "/" + rel);
    ASSERT_TRUE(json) << json.error().to_string();
    auto pb = perfetto_bytes(*json);
    ASSERT_TRUE(pb) << pb.error().to_string();
    auto back = parse_trace(rel, as_bytes(*pb));
    ASSERT_TRUE(back) << back.error().to_string();
    // Everything but the rows protobuf does not carry (non-track M events) comes back; X
    // events exactly, with their args.
    std::vector<std::string> want, got;
    for (size_t i = 0; i < json->size(); ++i) {
      if (json->phase(i) == 'X') want.push_back(json->describe(i));
    }
    for (size_t i = 0; i < back->size(); ++i) {
      if (back->phase(i) == 'X') got.push_back(back->describe(i));
    }
    std::sort(want.begin(), want.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, want);
    size_t flows_in = 0, flows_out = 0;
    for (size_t i = 0; i < json->size(); ++i) flows_in += json->phase(i) == 's' || json->phase(i) == 'f';
    for (size_t i = 0; i < back->size(); ++i) flows_out += back->phase(i) == 's' || back->phase(i) == 'f' || back->phase(i) == 't';
    EXPECT_EQ(flows_out, flows_in);
  }
}

TEST(PerfettoMalformed, BadUtf8AndBadJsonArgsStillWriteValidJson) {
  EventTable t;
  uint32_t tr = t.track_for(1, 1);
  t.add_event('X', t.strings().intern("bad\xff\xc3("), 0, 10, 5, tr);
  t.add_arg_json(t.strings().intern("list"), "[1, 2");  // broken JSON, as a fuzzed file may hold
  t.add_arg_json(t.strings().intern("ok"), "[1, 2]");
  t.finalize();
  auto pb = perfetto_bytes(t);
  ASSERT_TRUE(pb);
  auto back = parse_trace("u.pftrace", as_bytes(*pb));
  ASSERT_TRUE(back) << back.error().to_string();
  ASSERT_EQ(back->size(), 1u);
  EXPECT_EQ(back->find_arg(0, "list")->type, ArgType::kString);
  EXPECT_EQ(back->find_arg(0, "ok")->type, ArgType::kJson);
  std::string json = chrome_json_string(*back);
  auto again = testing::parse_json_text(json);
  ASSERT_TRUE(again) << again.error().to_string() << "\n" << json;
  EXPECT_EQ(again->name(0), "bad\xef\xbf\xbd\xef\xbf\xbd(");
}

// A trace written by hand: one thread track, slices given as (type, ts, name).
std::string slices_trace(std::initializer_list<std::tuple<perfetto::TrackEvent::Type, uint64_t, const char*>> evs) {
  perfetto::Trace trace;
  perfetto::TracePacket* d = trace.add_packet();
  d->set_trusted_packet_sequence_id(1);
  d->set_sequence_flags(perfetto::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
  d->mutable_track_descriptor()->set_uuid(7);
  d->mutable_track_descriptor()->mutable_thread()->set_pid(1);
  d->mutable_track_descriptor()->mutable_thread()->set_tid(2);
  for (auto [type, ts, name] : evs) {
    perfetto::TracePacket* p = trace.add_packet();
    p->set_trusted_packet_sequence_id(1);
    p->set_timestamp(ts);
    p->mutable_track_event()->set_type(type);
    p->mutable_track_event()->set_track_uuid(7);
    if (name != nullptr) p->mutable_track_event()->set_name(name);
  }
  return trace.SerializeAsString();
}

// Perfetto slices follow the B/E recovery rules: an END without a BEGIN is dropped and
// counted, a BEGIN never ended ends at its track's last timestamp; an END before its BEGIN is
// an error naming the packet's byte.
TEST(PerfettoMalformed, UnbalancedSlicesAreRecoveredOrRejected) {
  using T = perfetto::TrackEvent;
  auto r = parse_trace("u.pftrace", as_bytes(slices_trace({{T::TYPE_SLICE_END, 5, nullptr},
                                                            {T::TYPE_SLICE_BEGIN, 10, "open"},
                                                            {T::TYPE_SLICE_BEGIN, 20, "closed"},
                                                            {T::TYPE_SLICE_END, 30, nullptr},
                                                            {T::TYPE_INSTANT, 50, "last"}})));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->info().unmatched_end_events, 1u);
  EXPECT_EQ(r->info().unclosed_begin_events, 1u);
  auto lines = event_lines(*r);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "X closed cat= ts=20 dur=10 pid=1 tid=2 id=0 flags=0");
  EXPECT_EQ(lines[1], "X open cat= ts=10 dur=20 pid=1 tid=2 id=0 flags=0");
  EXPECT_EQ(lines[2].substr(0, 7), "i last ");
  auto bad = parse_trace("b.pftrace", as_bytes(slices_trace({{T::TYPE_SLICE_BEGIN, 10, "a"},
                                                              {T::TYPE_SLICE_END, 4, nullptr}})));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("b.pftrace: byte "), std::string::npos) << bad.error().message();
  EXPECT_NE(bad.error().message().find("expected SLICE_END at or after its SLICE_BEGIN (10 ns), got 4 ns"),
            std::string::npos)
      << bad.error().message();
}

TEST(PerfettoMalformed, ErrorsGiveTheOffset) {
  EventTable t = record_sample();
  auto pb = perfetto_bytes(t);
  ASSERT_TRUE(pb);
  const std::string& bytes = *pb;
  // Truncation anywhere: an error naming a byte offset, or (cut at a packet boundary) a
  // shorter trace; never a crash.
  size_t errors = 0;
  for (size_t n = 1; n < bytes.size(); ++n) {
    auto r = parse_perfetto("cut.pftrace", as_bytes(bytes.substr(0, n)).span());
    if (!r) {
      ++errors;
      ASSERT_EQ(r.error().message().rfind("cut.pftrace: byte ", 0), 0u) << r.error().message();
    }
  }
  EXPECT_GT(errors, bytes.size() / 2);
  auto r = parse_perfetto("x.pftrace", as_bytes(std::string("\x08\x01", 2)).span());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("byte 0: expected a length-delimited field (Trace.packet = 1), got field 1 wire type 0"), std::string::npos)
      << r.error().message();
  r = parse_perfetto("y.pftrace", as_bytes(std::string("\x0a\x05\x01\x02", 4)).span());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("byte 0: truncated input: field 1 declares 5 bytes but only 2 remain"), std::string::npos)
      << r.error().message();
  // A packet that refers to an interned name never defined.
  std::string pkt;
  {
    // TracePacket{ timestamp: 5, trusted_packet_sequence_id: 1, track_event { name_iid: 99 type: 3 } }
    std::string te = std::string("\x50\x63\x48\x03", 4);
    std::string p = std::string("\x40\x05\x50\x01\x5a", 5) + char(te.size()) + te;
    pkt = std::string("\x0a", 1) + char(p.size()) + p;
  }
  r = parse_perfetto("z.pftrace", as_bytes(pkt).span());
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("expected interned event name 99"), std::string::npos) << r.error().message();
}

}  // namespace
}  // namespace recur::trace
