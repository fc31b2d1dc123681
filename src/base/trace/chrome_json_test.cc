// Chrome JSON: record -> write -> read round trips, every HTA (Kineto) trace, Kineto details
// (exact ns from fractional µs, string pids, args, flows, distributedInfo), gzip, and
// malformed input (truncation, wrong types, negative durations, unbalanced B/E, bad gzip).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "trace/chrome_json.h"
#include "trace/test_util.h"
#include "trace/trace.h"
#include "trace/trace_io.h"
#include "trace/traced_mutex.h"

namespace recur::trace {
namespace {

using testing::event_lines;
using testing::parse_json_text;
using testing::track_lines;

std::string hta(const std::string& rel) { return std::string(RECUR_HTA_TESTDATA) + "/" + rel; }

// A trace that uses every recorded event kind, on two threads.
EventTable record_sample() {
  set_enabled(false);
  reset();
  set_enabled(true);
  set_thread_name("main");
  TracedMutex mu("pool");
  {
    RECUR_ZONE("step");
    zone.arg("layer", -3).arg("frac", 0.125).arg("name", "q\"uote\\d").arg("flag", false);
    RECUR_FLOW_BEGIN("kv", 5);
    RECUR_COUNTER("blocks", 9);
    RECUR_COUNTER("util", 0.75);
    RECUR_INSTANT("mark");
    std::lock_guard lock(mu);
  }
  std::thread other([] {
    set_thread_name("other");
    RECUR_ZONE_CAT(z, "recv", "io");
    z.arg("bytes", uint64_t(1) << 40);
    RECUR_FLOW_END("kv", 5);
  });
  other.join();
  set_enabled(false);
  EventTable t = capture();
  reset();
  return t;
}

TEST(ChromeJson, RoundTripsRecordedEvents) {
  EventTable t = record_sample();
  ASSERT_GE(t.size(), 8u);
  std::string json = chrome_json_string(t);
  auto back = parse_json_text(json);
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(event_lines(*back), event_lines(t));
  EXPECT_EQ(track_lines(*back), track_lines(t));
  // and once more: write(read(write(x))) == write(x)
  EXPECT_EQ(chrome_json_string(*back), json);
}

TEST(ChromeJson, RoundTripsThroughGzipFile) {
  EventTable t = record_sample();
  std::string path = ::testing::TempDir() + "/recur_trace_rt.json.gz";
  ASSERT_TRUE(write_trace(t, path));
  auto bytes = read_file_bytes(path);
  ASSERT_TRUE(bytes);
  EXPECT_TRUE(is_gzip(bytes->span()));
  auto back = read_trace(path);
  ASSERT_TRUE(back) << back.error().to_string();
  EXPECT_EQ(event_lines(*back), event_lines(t));
  std::filesystem::remove(path);
}

TEST(ChromeJson, ReadsKinetoConventions) {
  const char* json = R"JSON({"schemaVersion": 1,
    "distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8},
    "deviceProperties": [{"id": 0, "name": "GPU {weird] name"}],
    "traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "ncclKernel_AllReduce", "pid": 0, "tid": 7,
     "ts": 4458676983543.183, "dur": 41.4075,
     "args": {"External id": 12353, "device": 0, "stream": 7, "correlation": 57541,
              "blocks per SM": 4.740741, "grid": [512, 1, 1], "name": null, "big": 18446744073709551615}},
    {"ph": "s", "id": 57541, "pid": 2910249, "tid": 2919752, "ts": 4458676983526.767, "cat": "ac2g", "name": "ac2g"},
    {"ph": "f", "id": 57541, "pid": 0, "tid": 7, "ts": 4458676983543.183, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    {"name": "process_name", "ph": "M", "ts": 1.0, "pid": 2910249, "tid": 0, "args": {"name": "python3.10"}},
    {"name": "thread_sort_index", "ph": "M", "ts": 1.0, "pid": 0, "tid": 7, "args": {"sort_index": 7}},
    {"name": "process_labels", "ph": "M", "ts": 1.0, "pid": 0, "tid": 0, "args": {"labels": "GPU 0"}},
    {"ph": "X", "cat": "Trace", "ts": 4458676388068.751, "dur": 696181.687, "pid": "Spans", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
    {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 4458676388068.751},
    {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 4458677117099.727}
  ], "traceName": "x"})JSON";
  auto r = parse_json_text(json);
  ASSERT_TRUE(r) << r.error().to_string();
  const EventTable& t = *r;
  EXPECT_EQ(t.info().rank, 3);
  EXPECT_EQ(t.info().world_size, 8);
  EXPECT_NE(t.info().distributed_info_json.find("nccl"), std::string::npos);
  ASSERT_EQ(t.size(), 7u);  // process_name and thread_sort_index became track fields
  size_t k = SIZE_MAX;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.name(i) == "ncclKernel_AllReduce") k = i;
  }
  ASSERT_NE(k, SIZE_MAX);
  EXPECT_EQ(t.ts_ns(k), 4458676983543183);
  EXPECT_EQ(t.dur_ns(k), 41408);  // 41.4075 µs rounds half up
  EXPECT_EQ(t.int_arg(k, "stream"), 7);
  EXPECT_EQ(t.int_arg(k, "correlation"), 57541);
  EXPECT_EQ(t.int_arg(k, "External id"), 12353);
  EXPECT_EQ(t.find_arg(k, "blocks per SM")->type, ArgType::kDouble);
  EXPECT_EQ(t.str(t.find_arg(k, "grid")->s), "[512, 1, 1]");
  EXPECT_EQ(t.find_arg(k, "name")->type, ArgType::kNull);
  EXPECT_EQ(t.find_arg(k, "big")->type, ArgType::kUint);
  EXPECT_EQ(t.tracks()[t.track(k)].thread_sort_index, 7);
  const Process* py = t.find_process(2910249);
  ASSERT_NE(py, nullptr);
  EXPECT_EQ(t.str(py->name), "python3.10");
  bool saw_flow_end = false, saw_spans = false, saw_empty_label = false;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.phase(i) == 'f') {
      saw_flow_end = true;
      EXPECT_EQ(t.id(i), 57541u);
      EXPECT_TRUE(t.flags(i) & kFlagBindEnclosing);
    }
    if (t.name(i) == "PyTorch Profiler (0)") {
      saw_spans = true;
      EXPECT_EQ(t.str(t.find_process(t.pid(i))->label), "Spans");
      EXPECT_EQ(t.str(t.tracks()[t.track(i)].tid_label), "PyTorch Profiler");
      EXPECT_EQ(t.dur_ns(i), 696181687);
    }
    if (t.name(i) == "Record Window End") {
      saw_empty_label = true;
      EXPECT_TRUE(t.flags(i) & kFlagScopeGlobal);
      EXPECT_GE(t.pid(i), kSyntheticIdBase);
    }
  }
  EXPECT_TRUE(saw_flow_end && saw_spans && saw_empty_label);
  // Written back, string pids stay strings and everything reads back the same.
  std::string out = chrome_json_string(t);
  EXPECT_NE(out.find("\"pid\":\"Spans\""), std::string::npos);
  EXPECT_NE(out.find("\"pid\":\"\""), std::string::npos);
  auto again = parse_json_text(out);
  ASSERT_TRUE(again) << again.error().to_string();
  EXPECT_EQ(again->size(), t.size());
  EXPECT_EQ(chrome_json_string(*again), out);
}

TEST(ChromeJson, JsonStartingWithNewlineIsNotTakenForProtobuf) {
  // 0x0a is also Perfetto's first byte; Kineto files start with "\n{".
  auto r = parse_trace("nl.json", testing::bytes_of("\n{\"traceEvents\": [{\"ph\":\"i\",\"name\":\"a\",\"ts\":1}]}"));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->size(), 1u);
  auto bad = parse_trace("nl.json", testing::bytes_of("\n{\"traceEvents\": [{\"ph\":7}]}"));
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("expected a string for \"ph\""), std::string::npos)
      << bad.error().message();
}

TEST(ChromeJson, ArrayFormWithAndWithoutClosingBracket) {
  auto a = parse_json_text(R"([{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":2}])");
  ASSERT_TRUE(a) << a.error().to_string();
  EXPECT_EQ(a->size(), 1u);
  // Chrome's convention: a trace written while running may lack the final ']'.
  auto b = parse_json_text("[{\"ph\":\"X\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":2},\n");
  ASSERT_TRUE(b) << b.error().to_string();
  EXPECT_EQ(b->size(), 1u);
  auto empty = parse_json_text("[]");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->size(), 0u);
}

TEST(ChromeJson, ParsesMicrosecondsExactly) {
  int64_t ns = 0;
  EXPECT_TRUE(parse_us_to_ns("4458676522690.655", &ns));
  EXPECT_EQ(ns, 4458676522690655);
  EXPECT_TRUE(parse_us_to_ns("12", &ns));
  EXPECT_EQ(ns, 12000);
  EXPECT_TRUE(parse_us_to_ns("0.0015 ", &ns));
  EXPECT_EQ(ns, 2);
  EXPECT_TRUE(parse_us_to_ns("-3.5", &ns));
  EXPECT_EQ(ns, -3500);
  EXPECT_TRUE(parse_us_to_ns("1.5e3", &ns));
  EXPECT_EQ(ns, 1500000);
  EXPECT_FALSE(parse_us_to_ns("1.", &ns));
  EXPECT_FALSE(parse_us_to_ns("abc", &ns));
  EXPECT_TRUE(parse_us_to_ns("1695835542514261", &ns));  // µs since 1970, as Kineto writes
  EXPECT_EQ(ns, 1695835542514261000);
  EXPECT_FALSE(parse_us_to_ns("4700000000000000", &ns));  // at or past 2^62 ns: ts + dur could overflow
  EXPECT_FALSE(parse_us_to_ns("12345678901234567", &ns));
  // Eight-digit chunks, rounding carried into the integer part, a fourth digit below 5.
  EXPECT_TRUE(parse_us_to_ns("99999999.9995", &ns));
  EXPECT_EQ(ns, 100000000000);
  EXPECT_TRUE(parse_us_to_ns("12345678.123456\n", &ns));
  EXPECT_EQ(ns, 12345678123);
  EXPECT_TRUE(parse_us_to_ns("1234567812345678", &ns));
  EXPECT_EQ(ns, 1234567812345678000);
  EXPECT_TRUE(parse_us_to_ns("1.5E3", &ns));
  EXPECT_EQ(ns, 1500000);
  EXPECT_FALSE(parse_us_to_ns(" 12", &ns));
  EXPECT_FALSE(parse_us_to_ns("-", &ns));
  EXPECT_FALSE(parse_us_to_ns("12345678x", &ns));
  EXPECT_FALSE(parse_us_to_ns("1.2.3", &ns));
}

struct HtaCase {
  const char* path;
  size_t rows;  // events that stay rows (all but the four track/process metadata kinds)
  size_t complete;
  int64_t rank;
};

TEST(ChromeJson, LoadsEveryHtaTrace) {
  if (!std::filesystem::exists(RECUR_HTA_TESTDATA)) {
    GTEST_SKIP() << "no HTA test data at " << RECUR_HTA_TESTDATA;
  }
  // Counts from Python's json module over the same files.
  const HtaCase cases[] = {
      {"amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", 177, 113, 0},
      {"critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz", 1379, 868, 0},
      {"critical_path/cuda_event_sync/event_sync_trace.json.gz", 65, 33, 0},
      {"critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz", 118, 57, 0},
      {"critical_path/end_to_end/simple_add/input/trace.json.gz", 1319, 838, 0},
      {"critical_path/end_to_end/simple_add/output/overlaid_critical_path_trace.json.gz", 1703, 838, 0},
      {"critical_path/simple_add/benchmark_result_493459_1694039959_trace.json.gz", 1319, 838, 0},
      {"nccl_parser_config/nccl_data.json.gz", 40544, 26933, 0},
      {"ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz", 68665, 45420, 0},
      {"trace_filter/sampled_rank-0.json.gz", 4820, 4811, 0},
      {"trace_filter/sampled_rank-1.json.gz", 4685, 4676, 1},
  };
  size_t total = 0;
  for (const HtaCase& c : cases) {
    SCOPED_TRACE(c.path);
    auto r = read_trace(hta(c.path));
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->size(), c.rows);
    size_t x = 0;
    for (size_t i = 0; i < r->size(); ++i) x += r->phase(i) == 'X';
    EXPECT_EQ(x, c.complete);
    EXPECT_EQ(r->info().rank.value_or(0), c.rank);
    EXPECT_EQ(r->info().unmatched_end_events + r->info().unclosed_begin_events, 0u);
    for (size_t i = 1; i < r->size(); ++i) ASSERT_LE(r->ts_ns(i - 1), r->ts_ns(i));
    // GPU kernels carry their stream and correlation ids.
    size_t kernels = 0;
    for (size_t i = 0; i < r->size(); ++i) {
      if (r->cat(i) == "kernel") {
        ++kernels;
        ASSERT_TRUE(r->int_arg(i, "stream").has_value());
        ASSERT_TRUE(r->int_arg(i, "correlation").has_value());
      }
    }
    EXPECT_GT(kernels, 0u);
    // Round trip through our writer keeps every event.
    auto back = parse_json_text(chrome_json_string(*r));
    ASSERT_TRUE(back) << back.error().to_string();
    EXPECT_EQ(event_lines(*back), event_lines(*r));
    total += r->size();
  }
  EXPECT_GT(total, 100000u);
  // The list above is every trace there: a new file must be added to it.
  size_t found = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(RECUR_HTA_TESTDATA)) {
    if (!e.path().string().ends_with(".json.gz")) continue;
    ++found;
    std::string rel = std::filesystem::relative(e.path(), RECUR_HTA_TESTDATA).string();
    EXPECT_TRUE(std::any_of(std::begin(cases), std::end(cases), [&](const HtaCase& c) { return rel == c.path; }))
        << rel << " is not in LoadsEveryHtaTrace's list";
  }
  EXPECT_EQ(found, std::size(cases));
}

TEST(ChromeJson, NsResolutionTimestampsAreExact) {
  if (!std::filesystem::exists(RECUR_HTA_TESTDATA)) GTEST_SKIP() << "no HTA test data";
  auto r = read_trace(hta("nccl_parser_config/nccl_data.json.gz"));
  ASSERT_TRUE(r) << r.error().to_string();
  bool found = false;
  for (size_t i = 0; i < r->size(); ++i) {
    if (r->name(i) == "autograd::engine::evaluate_function: DivBackward1" &&
        r->ts_ns(i) == 4458676522690655) {
      EXPECT_EQ(r->dur_ns(i), 156777);
      EXPECT_EQ(r->int_arg(i, "External id"), 2049);
      found = true;
    }
  }
  EXPECT_TRUE(found);
  EXPECT_EQ(r->info().world_size, 2);
}

// ---- malformed input ----

std::string error_of(std::string_view json) {
  auto r = parse_json_text(json, "bad.json");
  if (r) return "OK";
  return r.error().to_string();
}

TEST(ChromeJsonMalformed, WrongTypesNameTheOffsetAndExpectation) {
  std::string e = error_of(R"({"traceEvents":[{"ph":"X","name":"a","ts":"soon","dur":1}]})");
  EXPECT_NE(e.find("bad.json: byte 42: expected a number (µs) for \"ts\", got string"), std::string::npos) << e;
  e = error_of(R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":1,"args":[1]}]})");
  EXPECT_NE(e.find("expected an object for \"args\", got array"), std::string::npos) << e;
  e = error_of(R"({"traceEvents":[{"ph":"X","name":7,"ts":1}]})");
  EXPECT_NE(e.find("expected a string for \"name\""), std::string::npos) << e;
  e = error_of(R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"pid":[1]}]})");
  EXPECT_NE(e.find("expected an integer or a string for \"pid\""), std::string::npos) << e;
  e = error_of(R"({"traceEvents":[17]})");
  EXPECT_NE(e.find("byte 16: expected an event object"), std::string::npos) << e;
  e = error_of(R"({"traceEvents":[{"name":"a","ts":1}]})");
  EXPECT_NE(e.find("expected a \"ph\""), std::string::npos) << e;
  e = error_of(R"({"traceEvents":[{"ph":"XX","ts":1}]})");
  EXPECT_NE(e.find("one-character"), std::string::npos) << e;
  e = error_of(R"({"traceEvents":[{"ph":"X","name":"a"}]})");
  EXPECT_NE(e.find("expected a \"ts\""), std::string::npos) << e;
  e = error_of(R"({"traceEvents":{}})");
  EXPECT_NE(e.find("byte 15: expected '[' for \"traceEvents\""), std::string::npos) << e;
  e = error_of(R"(17)");
  EXPECT_NE(e.find("byte 0: expected '[' or '{' to start"), std::string::npos) << e;
  e = error_of("");
  EXPECT_NE(e.find("empty input"), std::string::npos) << e;
  e = error_of(R"({"traceEvents":[{"ph":"X","name":"a","ts":1} {"ph":"i","ts":2}]})");
  EXPECT_NE(e.find("byte 45: expected an event object, or ',' or ']' after an event"), std::string::npos) << e;
  e = error_of(R"({"distributedInfo": {"rank": "zero"}, "traceEvents":[]})");
  EXPECT_NE(e.find("expected an integer for distributedInfo.rank"), std::string::npos) << e;
}

// Every member the reader keeps, given the wrong type (or an invalid value of the right
// type), names the byte where the value starts and what was expected.
TEST(ChromeJsonMalformed, EveryKeptMemberRejectsTheWrongType) {
  struct Case {
    const char* json;
    const char* error;
  };
  const Case cases[] = {
      {R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":"long"}]})", "byte 50: expected a number (µs) for \"dur\", got string"},
      {R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"tid":1.5}]})", "byte 50: expected an integer for \"tid\", got number"},
      {R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"tid":true}]})", "byte 50: expected an integer or a string for \"tid\", got boolean"},
      {R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"cat":3}]})", "byte 50: expected a string for \"cat\", got number"},
      {R"({"traceEvents":[{"ph":"s","name":"a","ts":1,"id":[1]}]})", "byte 49: expected an integer or a string for \"id\", got array"},
      {R"({"traceEvents":[{"ph":"f","name":"a","ts":1,"id":1,"bp":1}]})", "byte 56: expected a string for \"bp\", got number"},
      {R"({"traceEvents":[{"ph":"i","name":"a","ts":1,"s":{}}]})", "byte 48: expected a string for \"s\", got object"},
      {R"({"traceEvents":[{"ph":1,"name":"a","ts":1}]})", "byte 22: expected a string for \"ph\", got number"},
      {R"({"distributedInfo": {"rank": 0, "world_size": 2.5}, "traceEvents":[]})", "byte 20: expected an integer for distributedInfo.world_size"},
      {R"({"distributedInfo": [1], "traceEvents":[]})", "byte 20: expected an object for \"distributedInfo\""},
      {R"({"traceEvents":[{"ph":"X","name":"a","ts":4700000000000000}]})", "byte 42: expected a number of µs for \"ts\" below 2^62 ns"},
      {R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"dur":1e400}]})", "byte 50: expected a number of µs for \"dur\" below 2^62 ns"},
      {R"({"traceEvents":[{"ph":"X","name":"a","ts":1,"args":{"x":tru}}]})", "byte 56: expected a boolean for \"x\", got invalid JSON `tru`"},
      {R"({"traceEvents":[{"ph":"X","name":"a\u12","ts":1}]})", "byte 33: expected a string for \"name\", got invalid JSON `\"a\\u12\"`"},
      {R"({"traceEvents":[{"ph":"X","name":"a","ts":1}],"recurDroppedEvents":-1})", "byte 67: expected a non-negative integer for \"recurDroppedEvents\""},
  };
  for (const Case& c : cases) {
    std::string e = error_of(c.json);
    EXPECT_NE(e.find(std::string("bad.json: ") + c.error), std::string::npos) << c.json << "\n" << e;
  }
}

TEST(ChromeJsonMalformed, NegativeDurationIsAnError) {
  std::string e = error_of(R"({"traceEvents":[{"ph":"X","name":"a","ts":5,"dur":-1.5}]})");
  EXPECT_NE(e.find("byte 50: expected a non-negative \"dur\", got -1500 ns"), std::string::npos) << e;
}

TEST(ChromeJsonMalformed, UnbalancedBeginEndIsRecovered) {
  auto r = parse_json_text(R"([
    {"ph":"E","name":"orphan","pid":1,"tid":1,"ts":1},
    {"ph":"B","name":"open","pid":1,"tid":1,"ts":2},
    {"ph":"B","name":"closed","pid":1,"tid":1,"ts":3},
    {"ph":"E","pid":1,"tid":1,"ts":4,"args":{"result":1}},
    {"ph":"X","name":"last","pid":1,"tid":1,"ts":9,"dur":1}
  ])");
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->info().unmatched_end_events, 1u);
  EXPECT_EQ(r->info().unclosed_begin_events, 1u);
  auto lines = event_lines(*r);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0], "X closed cat= ts=3000 dur=1000 pid=1 tid=1 id=0 flags=0 result=1");
  EXPECT_EQ(lines[1], "X last cat= ts=9000 dur=1000 pid=1 tid=1 id=0 flags=0");
  EXPECT_EQ(lines[2], "X open cat= ts=2000 dur=8000 pid=1 tid=1 id=0 flags=0");
}

TEST(ChromeJsonMalformed, EveryTruncationFailsCleanly) {
  EventTable t = record_sample();
  std::string json = chrome_json_string(t);
  size_t ok = 0;
  for (size_t n = 0; n + 1 < json.size(); ++n) {
    auto r = parse_json_text(std::string_view(json).substr(0, n), "cut.json");
    if (r) {
      ++ok;
      continue;
    }
    const std::string& m = r.error().message();
    ASSERT_EQ(m.rfind("cut.json: byte ", 0), 0u) << m;
    ASSERT_NE(m.find("expected"), std::string::npos) << m;
  }
  // Only the cut that drops the final newline (and nothing else) can still parse.
  EXPECT_LE(ok, 1u);
}

TEST(ChromeJsonMalformed, TruncatedEventReportsWhereItStarted) {
  std::string e = error_of(R"({"traceEvents":[{"ph":"X","name":"a","ts":1},{"ph":"X","na)");
  EXPECT_NE(e.find("unexpected end of input"), std::string::npos) << e;
  EXPECT_NE(e.find("the event starting at byte 45 is truncated"), std::string::npos) << e;
}

TEST(ChromeJsonMalformed, BadGzipIsAnError) {
  EventTable t = record_sample();
  std::string path = ::testing::TempDir() + "/recur_trace_bad.json.gz";
  ASSERT_TRUE(write_trace(t, path));
  auto bytes = read_file_bytes(path);
  ASSERT_TRUE(bytes);
  std::vector<uint8_t> gz(bytes->span().begin(), bytes->span().end());
  // truncated
  std::vector<uint8_t> cut(gz.begin(), gz.begin() + gz.size() / 2);
  auto r = parse_trace("cut.json.gz", PaddedBytes::copy_of(cut));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("cut.json.gz: byte"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("truncated gzip"), std::string::npos) << r.error().message();
  // corrupted deflate data
  std::vector<uint8_t> bad = gz;
  for (size_t i = 12; i < 40 && i < bad.size(); ++i) bad[i] ^= 0x5a;
  r = parse_trace("bad.json.gz", PaddedBytes::copy_of(bad));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("bad gzip data"), std::string::npos) << r.error().message();
  // trailing garbage after a valid member
  std::vector<uint8_t> tail = gz;
  tail.push_back('x');
  r = parse_trace("tail.json.gz", PaddedBytes::copy_of(tail));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("expected a gzip member"), std::string::npos) << r.error().message();
  // not gzip at all after the magic
  std::vector<uint8_t> magic_only = {0x1f, 0x8b, 0x08, 0x00};
  r = parse_trace("magic.json.gz", PaddedBytes::copy_of(magic_only));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("magic.json.gz: byte"), std::string::npos) << r.error().message();
  std::filesystem::remove(path);
}

TEST(ChromeJson, ReadsMultiMemberGzip) {
  EventTable t = record_sample();
  std::string json = chrome_json_string(t);
  std::vector<uint8_t> gz = testing::gzip_member(std::string_view(json).substr(0, json.size() / 2));
  std::vector<uint8_t> second = testing::gzip_member(std::string_view(json).substr(json.size() / 2));
  gz.insert(gz.end(), second.begin(), second.end());
  auto r = parse_trace("multi.json.gz", PaddedBytes::copy_of(gz));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(event_lines(*r), event_lines(t));
}

TEST(ChromeJsonMalformed, MissingFileNamesIt) {
  auto r = read_trace("/nonexistent/trace.json");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("/nonexistent/trace.json: cannot open"), std::string::npos);
}

TEST(ChromeJsonMalformed, NonRegularFilesAreRefusedByName) {
  // A directory once gave "internal error: std::bad_alloc"; /dev/zero was read forever; a FIFO
  // would wait for a writer.
  std::string dir = ::testing::TempDir() + "/recur_trace_dir";
  std::filesystem::create_directories(dir);
  auto r = read_trace(dir);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), dir + ": is a directory: expected a regular trace file");
  r = read_trace("/dev/zero");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message(), "/dev/zero: is a character device: expected a regular trace file");
  std::filesystem::remove(dir);
}

TEST(ChromeJsonMalformed, GzipStopsAtTheInflateLimit) {
  // 4 MiB of one name from a few KB of gzip: refused at a 1 MiB limit, read under a 8 MiB one.
  std::string json = R"({"traceEvents":[{"ph":"i","ts":1,"pid":1,"tid":1,"name":")" + std::string(4 << 20, 'a') + "\"}]}";
  std::vector<uint8_t> gz = testing::gzip_member(json);
  ASSERT_LT(gz.size(), 64u << 10);
  auto r = parse_trace("bomb.json.gz", PaddedBytes::copy_of(gz), ReadLimits{.max_trace_bytes = 1 << 20});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kFailedPrecondition);
  EXPECT_NE(r.error().message().find("bomb.json.gz: inflates to more than 1048576 bytes"), std::string::npos)
      << r.error().message();
  auto whole = gunzip("bomb.json.gz", gz, ReadLimits{.max_trace_bytes = 1 << 20});
  ASSERT_FALSE(whole);
  r = parse_trace("bomb.json.gz", PaddedBytes::copy_of(gz), ReadLimits{.max_trace_bytes = 8 << 20});
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->size(), 1u);
  // Exactly at the limit is fine.
  EXPECT_TRUE(gunzip("exact.json.gz", gz, ReadLimits{.max_trace_bytes = json.size()}));
  EXPECT_FALSE(gunzip("exact.json.gz", gz, ReadLimits{.max_trace_bytes = json.size() - 1}));
}

TEST(ChromeJsonMalformed, DefaultInflateLimitFollowsTheCompressedSize) {
  ReadLimits d;
  EXPECT_EQ(d.inflate_limit(1000), kMinDefaultInflateLimit);
  EXPECT_EQ(d.inflate_limit(size_t(10) << 20), uint64_t(1000) << 20);  // 100x
  EXPECT_EQ(d.inflate_limit(size_t(1) << 30), kMaxDefaultInflateLimit);
  EXPECT_EQ(ReadLimits{.max_trace_bytes = 5}.inflate_limit(size_t(1) << 30), 5u);
}

// Invalid UTF-8 once rejected the whole trace, at the start of the ~64 KiB batch holding it.
// Now each bad byte becomes U+FFFD and its exact offset is noted; later errors in the same
// batch still report exact offsets.
TEST(ChromeJson, InvalidUtf8IsReplacedAndItsOffsetNoted) {
  std::string prefix;
  for (int i = 0; i < 200; ++i) prefix += R"({"ph":"X","name":"pad","pid":1,"tid":1,"ts":1,"dur":1},)";
  std::string json = "[" + prefix + R"({"ph":"X","pid":1,"tid":1,"ts":2,"dur":1,"name":"a)";
  size_t bad1 = json.size();
  json += "\xff";
  json += "b\xc3\xa9";  // a valid é stays
  size_t bad2 = json.size();
  json += "\xc3(";  // a cut-short sequence: one bad byte
  json += R"(","args":{"k":"v"}}])";
  for (bool gz : {false, true}) {
    SCOPED_TRACE(gz ? "gzip" : "plain");
    auto r = gz ? parse_trace("u.json.gz", PaddedBytes::copy_of(testing::gzip_member(json)))
                : parse_json_text(json, "u.json");
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->info().invalid_utf8_bytes, 2u);
    EXPECT_EQ(r->info().invalid_utf8_offsets, (std::vector<uint64_t>{bad1, bad2}));
    size_t last = r->size() - 1;
    EXPECT_EQ(r->name(last), "a\xEF\xBF\xBD" "b\xc3\xa9\xEF\xBF\xBD(");
  }
  // An error after a replacement in the same batch: the offset of the bad value itself.
  std::string broken = "[" + prefix + R"({"ph":"X","pid":1,"tid":1,"ts":2,"dur":1,"name":")" + "\xff\xff" +
                       R"("},{"ph":"X","ts":)";
  size_t bad_ts = broken.size();
  broken += R"("x","pid":1,"tid":1}])";
  auto e = parse_json_text(broken, "e.json");
  ASSERT_FALSE(e);
  EXPECT_NE(e.error().message().find(fmt::format("e.json: byte {}: expected", bad_ts)), std::string::npos)
      << e.error().message();
}

}  // namespace
}  // namespace recur::trace
