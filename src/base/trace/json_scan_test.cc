// JsonScanner against a byte-at-a-time reference on generated JSON with strings, escapes and
// brackets inside strings, at every alignment.
// GCC 12 reports a false -Wrestrict inside std::string appends here (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "core/cpu_features.h"
#include "trace/json_scan.h"
#include "trace/test_util.h"

namespace recur::trace {
namespace {

// Reference: positions just past each depth-0 element end and the container end.
struct RefScan {
  std::vector<size_t> element_ends;
  size_t container_end = SIZE_MAX;
};

RefScan reference(const std::string& s, size_t start) {
  RefScan r;
  int depth = 0;
  bool in_str = false;
  for (size_t i = start; i < s.size(); ++i) {
    char c = s[i];
    if (in_str) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_str = false;
      }
      continue;
    }
    if (c == '"') in_str = true;
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') {
      --depth;
      if (depth < 0) {
        r.container_end = i;
        return r;
      }
      if (depth == 0) r.element_ends.push_back(i + 1);
    }
  }
  return r;
}

std::string random_string(std::mt19937& rng) {
  static const char* pieces[] = {"a", "{", "}", "[", "]", "\\\"", "\\\\", "\\n", ",", ":", " ",
                                 "\\u00e9", "xyz"};
  std::string s = "\"";
  int n = int(rng() % 12);
  for (int i = 0; i < n; ++i) s += pieces[rng() % 13];
  s += '"';
  return s;
}

std::string random_value(std::mt19937& rng, int depth) {
  int kind = int(rng() % (depth > 3 ? 3 : 5));
  if (kind == 0) return std::to_string(rng() % 1000);
  if (kind == 1) return random_string(rng);
  if (kind == 2) return "true";
  std::string s;
  int n = int(rng() % 4);
  if (kind == 3) {
    s = "[";
    for (int i = 0; i < n; ++i) {
      if (i) s += ',';
      s += random_value(rng, depth + 1);
    }
    s += ']';
    return s;
  }
  s = "{";
  for (int i = 0; i < n; ++i) {
    if (i) s += ",\n ";
    s += random_string(rng);
    s += ':';
    s += random_value(rng, depth + 1);
  }
  s += '}';
  return s;
}

// Both the SSE2 and the AVX2 block classifiers (the latter where the CPU has it).
class JsonScannerIsa : public ::testing::TestWithParam<Isa> {};

TEST_P(JsonScannerIsa, MatchesReferenceOnRandomArrays) {
  ScopedIsaCap cap(GetParam());
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string body(size_t(rng() % 70), ' ');
    body += '[';
    size_t start = body.size();
    int n = int(rng() % 30);
    for (int i = 0; i < n; ++i) {
      if (i) body += ',';
      body += '{';
      body += random_string(rng);
      body += ':';
      body += random_value(rng, 0);
      body += '}';
    }
    body += ']';
    PaddedBytes buf = testing::bytes_of(body);
    JsonScanner sc(buf.data(), buf.size());
    RefScan ref = reference(body, start);
    ASSERT_EQ(ref.element_ends.size(), size_t(n));
    // Walk element by element (min_end = 0) and in batches of ~100 bytes.
    size_t pos = start;
    for (size_t k = 0; k < ref.element_ends.size(); ++k) {
      JsonScanner::Scan s = sc.scan(pos, 0);
      ASSERT_EQ(s.stop, JsonScanner::Stop::kElementEnd) << body;
      ASSERT_EQ(s.pos, ref.element_ends[k]) << body;
      pos = s.pos;
    }
    JsonScanner::Scan end = sc.scan(pos, 0);
    ASSERT_EQ(end.stop, JsonScanner::Stop::kContainerEnd);
    EXPECT_EQ(end.pos, ref.container_end);
    JsonScanner::Scan batch = sc.scan(start, start + 100);
    auto it = std::lower_bound(ref.element_ends.begin(), ref.element_ends.end(), start + 100);
    if (it == ref.element_ends.end()) {
      EXPECT_EQ(batch.stop, JsonScanner::Stop::kContainerEnd);
    } else {
      EXPECT_EQ(batch.pos, *it);
    }
    // value_end of the whole array
    EXPECT_EQ(sc.value_end(start - 1), body.size());
  }
}

INSTANTIATE_TEST_SUITE_P(Isas, JsonScannerIsa, ::testing::Values(Isa::kScalar, Isa::kAvx2),
                         [](const auto& info) { return std::string(isa_name(info.param)); });

TEST(JsonScanner, ReportsEofAndInString) {
  std::string body = "{\"a\": \"unterminated";
  PaddedBytes buf = testing::bytes_of(body);
  JsonScanner sc(buf.data(), buf.size());
  JsonScanner::Scan s = sc.scan(0, 0);
  EXPECT_EQ(s.stop, JsonScanner::Stop::kEof);
  EXPECT_TRUE(s.eof_in_string);
  EXPECT_EQ(sc.value_end(0), body.size() + 1);
  EXPECT_EQ(sc.string_end(6), body.size() + 1);
  std::string esc = "\"a\\\\\" rest";  // "a\\" then rest: the quote after two backslashes closes
  PaddedBytes b2 = testing::bytes_of(esc);
  JsonScanner s2(b2.data(), b2.size());
  EXPECT_EQ(s2.string_end(0), 5u);
  std::string esc1 = "\"a\\\" b\" c";  // "a\" b" : the first quote is escaped
  PaddedBytes b3 = testing::bytes_of(esc1);
  JsonScanner s3(b3.data(), b3.size());
  EXPECT_EQ(s3.string_end(0), 7u);
}

}  // namespace
}  // namespace recur::trace
