#include "serve/http_framing.h"

#include <gtest/gtest.h>

namespace recur::serve {
namespace {

constexpr size_t kMax = 1000;

RequestHead head_of(std::string_view bytes) {
  auto h = parse_request_head(bytes, kMax);
  EXPECT_TRUE(h.has_value()) << (h ? "" : h.error().message);
  EXPECT_TRUE(h && h->has_value()) << bytes;
  return h && *h ? **h : RequestHead{};
}

int refusal_of(std::string_view bytes) {
  auto h = parse_request_head(bytes, kMax);
  EXPECT_FALSE(h.has_value()) << bytes;
  return h ? 0 : h.error().http_status;
}

TEST(HttpFramingTest, HeadWaitsForItsBlankLine) {
  auto h = parse_request_head("POST /v1/completions HTTP/1.1\r\nHost: x\r\n", kMax);
  ASSERT_TRUE(h.has_value());
  EXPECT_FALSE(h->has_value());
}

TEST(HttpFramingTest, HeadFields) {
  RequestHead h = head_of("POST /v1/completions?x=1 HTTP/1.1\r\ncontent-length: 12\r\nExpect: 100-continue\r\n\r\nbody");
  EXPECT_EQ(h.method, "POST");
  EXPECT_EQ(h.path, "/v1/completions");
  EXPECT_EQ(h.content_length, 12u);
  EXPECT_TRUE(h.expect_continue);
  EXPECT_FALSE(h.chunked);
  EXPECT_EQ(h.head_bytes, std::string_view("POST /v1/completions?x=1 HTTP/1.1\r\ncontent-length: 12\r\nExpect: 100-continue\r\n\r\n").size());
  EXPECT_TRUE(head_of("POST / HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n").chunked);
}

TEST(HttpFramingTest, RefusesBeforeTheBody) {
  EXPECT_EQ(refusal_of("POST / HTTP/1.1\r\nContent-Length: 1001\r\n\r\n"), 413);
  EXPECT_EQ(refusal_of("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n"), 413);
  EXPECT_EQ(refusal_of("POST / HTTP/1.1\r\nContent-Length: 12x\r\n\r\n"), 400);
  EXPECT_EQ(refusal_of("POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"), 400);
  EXPECT_EQ(refusal_of("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"), 501);
  EXPECT_EQ(refusal_of("POST / HTTP/1.1\r\nContent-Encoding: gzip\r\n\r\n"), 415);
  EXPECT_EQ(refusal_of("POST / HTTP/1.1\r\nno colon\r\n\r\n"), 400);
  EXPECT_EQ(refusal_of("GARBAGE\r\n\r\n"), 400);
  EXPECT_EQ(refusal_of("GET / HTTP/1.1\r\nX: " + std::string(kMaxRequestHeadBytes, 'a')), 431);
}

TEST(HttpFramingTest, ChunkedBodyEndsAtItsLastChunk) {
  ChunkedBodyScanner scan(kMax);
  const std::string body = "5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nTrailer: x\r\n\r\n";
  // Fed a byte at a time, as a slow client sends it.
  for (size_t i = 0; i + 1 < body.size(); ++i) {
    auto r = scan.feed(body.substr(i, 1));
    ASSERT_TRUE(r.has_value()) << i << ": " << r.error().message;
    ASSERT_FALSE(*r) << i;
  }
  auto r = scan.feed(body.substr(body.size() - 1) + "GET / HTTP/1.1\r\n");
  ASSERT_TRUE(r.has_value());
  EXPECT_TRUE(*r);
  EXPECT_EQ(scan.consumed(), body.size());
  EXPECT_EQ(scan.decoded(), 11u);
}

TEST(HttpFramingTest, ChunkedBodyOverTheLimitIsRefusedWhileItArrives) {
  ChunkedBodyScanner scan(kMax);
  const std::string chunk = "200\r\n" + std::string(0x200, 'a') + "\r\n";  // 512 bytes
  ASSERT_TRUE(scan.feed(chunk).has_value());
  auto r = scan.feed("200\r\n");  // 1024 declared in all: refused before its data
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().http_status, 413);
  ChunkedBodyScanner huge(kMax);
  auto h = huge.feed("ffffffffffffffffffffffff\r\n");
  ASSERT_FALSE(h.has_value());
  EXPECT_EQ(h.error().http_status, 413);
}

TEST(HttpFramingTest, MalformedChunksNameTheByte) {
  ChunkedBodyScanner scan(kMax);
  auto r = scan.feed("3\r\nabcX");
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().http_status, 400);
  EXPECT_NE(r.error().message.find("byte 6"), std::string::npos) << r.error().message;
  ChunkedBodyScanner empty(kMax);
  EXPECT_FALSE(empty.feed("\r\n").has_value());
  ChunkedBodyScanner endless(kMax);
  EXPECT_FALSE(endless.feed(std::string(2000, '0')).has_value());
}

}  // namespace
}  // namespace recur::serve
