// Gzip input is parsed while it is inflated, and a plain file as it is read, through a window
// of ~256 KiB (chrome_json.h): the result and every error must be the same as for the text in
// memory, wherever the window boundaries fall (events and top-level values longer than the
// window, long runs of whitespace, truncation and bad values deep into the file).
// GCC 12 reports a false -Wrestrict inside std::string inserts here (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <malloc.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "trace/chrome_json.h"
#include "trace/test_util.h"
#include "trace/trace_io.h"

namespace recur::trace {
namespace {

using testing::bytes_of;
using testing::event_lines;
using testing::gzip_member;

// What the in-memory reader and the streaming reader make of the same text: the events, or
// the error message.
std::string outcome(const Result<EventTable>& r) {
  if (!r) return "error: " + r.error().message();
  std::string s = fmt::format("rank={} dropped={} unmatched={} unclosed={}\n", r->info().rank.value_or(-1),
                              r->info().dropped_events, r->info().unmatched_end_events,
                              r->info().unclosed_begin_events);
  for (const std::string& line : event_lines(*r)) s += line + "\n";
  return s;
}

// The same text in memory, inflated from gzip, and read from a plain file (read_trace()
// parses it as it reads: the file is never all in memory) gives the same events or error.
void expect_same(std::string_view json) {
  std::string memory = outcome(parse_chrome_json("t.json", bytes_of(json)));
  std::vector<uint8_t> gz = gzip_member(json);
  std::string stream = outcome(parse_chrome_json_gzip("t.json", gz));
  ASSERT_EQ(stream, memory) << "input of " << json.size() << " bytes";
  std::string path = fmt::format("{}/recur_stream_{}.json", ::testing::TempDir(), ::getpid());
  {
    std::ofstream f(path, std::ios::binary);
    f.write(json.data(), std::streamsize(json.size()));
  }
  std::string file = outcome(read_trace(path));
  std::filesystem::remove(path);
  std::string memory_as_file = outcome(parse_chrome_json(path, bytes_of(json)));
  ASSERT_EQ(file, memory_as_file) << "a file of " << json.size() << " bytes";
}

// About `bytes` of Kineto-like events (~200 bytes each).
std::string big_trace(size_t bytes, std::string_view before_events = "") {
  std::string s = "{\"distributedInfo\": {\"rank\": 2}, ";
  s += before_events;
  s += "\"traceEvents\": [\n";
  size_t start = s.size();
  for (size_t i = 0; s.size() - start < bytes; ++i) {
    if (i) s += ",\n";
    s += fmt::format(
        "  {{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k{}\", \"pid\": 0, \"tid\": {}, "
        "\"ts\": {}.{:03}, \"dur\": {}.5, \"args\": {{\"stream\": 7, \"correlation\": {}, \"grid\": [1, 2]}}}}",
        i % 97, i % 5, 1000 + i * 3, i % 1000, i % 13, i);
  }
  s += "\n]}\n";
  return s;
}

TEST(ChromeJsonStream, SameEventsAsInMemoryAcrossWindowBoundaries) {
  for (size_t bytes : {size_t(100), size_t(70000), size_t(300000), size_t(1300000)}) {
    SCOPED_TRACE(bytes);
    expect_same(big_trace(bytes));
  }
  // Array form, with and without the closing bracket.
  std::string arr = big_trace(600000);
  arr = "[" + arr.substr(arr.find("\"traceEvents\": [") + 16);
  arr.resize(arr.rfind(']'));  // drop "]}\n" ...
  expect_same(arr + "]");
  expect_same(arr);
}

TEST(ChromeJsonStream, EventsAndValuesLongerThanTheWindow) {
  // A top-level value of 1 MB before the events, an event with a 700 KB string arg, and 400 KB
  // of whitespace between two events.
  std::string props = "\"deviceProperties\": [" + std::string(1000000, ' ') + "{\"name\": \"GPU\"}], ";
  std::string t = big_trace(400000, props);
  size_t cut = t.find("\"k50\"");
  ASSERT_NE(cut, std::string::npos);
  t.insert(cut, "\"long\", \"args\": {\"text\": \"" + std::string(700000, 'x') + "\"}, \"name\": ");
  size_t gap = t.find("},\n", t.size() / 2);
  t.insert(gap + 2, std::string(400000, ' '));
  expect_same(t);
  auto r = parse_chrome_json_gzip("t.json", gzip_member(t));
  ASSERT_TRUE(r) << r.error().to_string();
  EXPECT_EQ(r->info().rank, 2);
}

TEST(ChromeJsonStream, ErrorsGiveTheSameUncompressedOffsets) {
  std::string t = big_trace(900000);
  // Truncation at many points, including deep into the file.
  for (size_t n : {size_t(0), size_t(1), size_t(20), size_t(70000), size_t(262143), size_t(262144),
                   size_t(400001), t.size() / 2, t.size() - 3, t.size() - 1}) {
    SCOPED_TRACE(n);
    expect_same(std::string_view(t).substr(0, n));
  }
  // A wrong type, a negative duration and a syntax error 700 KB in.
  for (const char* bad : {"\"ts\": \"late\"", "\"dur\": -2", "\"ts\": 12 13"}) {
    SCOPED_TRACE(bad);
    std::string u = t;
    size_t at = u.find("\"ts\": ", 700000);
    size_t end = u.find(',', at);
    u.replace(at, end - at, bad);
    std::string memory = outcome(parse_chrome_json("t.json", bytes_of(u)));
    EXPECT_NE(memory.find("error: t.json: byte 7"), std::string::npos) << memory;
    expect_same(u);
  }
  // Trailing garbage after the top-level object, and an empty object.
  expect_same(t + "x");
  expect_same("{}");
  expect_same("{} x");
}

// This process's resident set now and its peak since the last reset_peak_rss(), in bytes
// (Linux: /proc/self/status); nullopt where unavailable.
std::optional<std::pair<size_t, size_t>> rss_and_peak() {
  std::ifstream f("/proc/self/status");
  size_t rss = 0, peak = 0;
  for (std::string line; std::getline(f, line);) {
    if (line.starts_with("VmRSS:")) rss = std::stoull(line.substr(6)) << 10;
    if (line.starts_with("VmHWM:")) peak = std::stoull(line.substr(6)) << 10;
  }
  if (rss == 0 || peak == 0) return std::nullopt;
  return std::pair(rss, peak);
}
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return bool(f);
}

// How much the resident set grows (peak minus start) while `f` runs.
template <typename F>
std::optional<size_t> peak_growth(F&& f) {
  if (!reset_peak_rss()) return std::nullopt;
  auto before = rss_and_peak();
  f();
  auto after = rss_and_peak();
  if (!before || !after) return std::nullopt;
  return after->second > before->first ? after->second - before->first : 0;
}

// The memory guard for issue #24 (1 GB of a real trace must analyze in at most 1.5x its
// size): read_trace() never holds the file, only the table. Reading the whole file first (the
// old way) peaks at the file plus the table; this test shows both on a 24 MB trace, so it
// fails if the file is ever read whole again. Table for these events: about 0.5x the text.
TEST(ChromeJsonStream, ReadingAFileDoesNotHoldIt) {
  // Blocks of 1 MiB and up come from mmap and go back to the system when freed, so one
  // measurement does not reuse pages the other left resident (glibc otherwise raises this
  // threshold to the largest block freed so far).
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  std::string path = fmt::format("{}/recur_rss_{}.json", ::testing::TempDir(), ::getpid());
  size_t file_bytes = 0;
  {
    std::string t = big_trace(size_t(24) << 20);
    file_bytes = t.size();
    std::ofstream f(path, std::ios::binary);
    f.write(t.data(), std::streamsize(t.size()));
  }
  size_t events = 0;
  auto streamed = peak_growth([&] {
    auto r = read_trace(path);
    ASSERT_TRUE(r) << r.error().to_string();
    events = r->size();
  });
  if (!streamed) GTEST_SKIP() << "no /proc/self/status or clear_refs: peak RSS not measurable here";
  auto whole = peak_growth([&] {
    auto bytes = read_file_bytes(path);
    ASSERT_TRUE(bytes);
    auto r = parse_trace(path, std::move(*bytes));
    ASSERT_TRUE(r) << r.error().to_string();
    EXPECT_EQ(r->size(), events);
  });
  std::filesystem::remove(path);
  ASSERT_TRUE(whole);
  double ratio = double(*streamed) / double(file_bytes), whole_ratio = double(*whole) / double(file_bytes);
  EXPECT_LT(ratio, 0.8) << "read_trace() of " << file_bytes << " bytes (" << events << " events) grew the RSS by "
                        << *streamed << " bytes";
  std::printf("peak RSS growth / file size: read_trace %.2f, whole file then parse %.2f\n", ratio, whole_ratio);
  // The whole-file read shows what the bound tells apart: the file's bytes on top of the table.
  EXPECT_GT(whole_ratio, 1.0) << "the whole-file read grew the RSS by " << *whole << " bytes";
}

// Every trace under the HTA test data (all folders, critical_path/** included), found by
// walking the tree rather than from a list: the same events through both paths, and at least
// one GPU kernel each.
TEST(ChromeJsonStream, EveryHtaTraceSameAsInMemory) {
  std::filesystem::path dir = RECUR_HTA_TESTDATA;
  if (!std::filesystem::exists(dir)) GTEST_SKIP() << "no HTA test data at " << dir;
  size_t files = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (!e.path().string().ends_with(".json.gz")) continue;
    SCOPED_TRACE(e.path().string());
    ++files;
    auto gz = read_file_bytes(e.path().string());
    ASSERT_TRUE(gz) << gz.error().to_string();
    auto json = gunzip(e.path().string(), gz->span());
    ASSERT_TRUE(json) << json.error().to_string();
    auto memory = parse_chrome_json(e.path().string(), *json);
    ASSERT_TRUE(memory) << memory.error().to_string();
    auto stream = read_trace(e.path().string());
    ASSERT_TRUE(stream) << stream.error().to_string();
    EXPECT_EQ(outcome(stream), outcome(memory));
    EXPECT_GT(memory->size(), 0u);
  }
  EXPECT_GE(files, 11u);
}

}  // namespace
}  // namespace recur::trace
