#include "transfer/frame.h"

#include <gtest/gtest.h>

#include <cstring>

#include "transfer/checksum.h"

namespace recur::transfer {
namespace {

FrameHeader sample_write() {
  FrameHeader h;
  h.op = FrameOp::kWrite;
  h.request_id = 42;
  h.region = 3;
  h.offset = 4096;
  h.length = 100;
  h.checksum = 0x1234;
  return h;
}

// Encodes `h`, lets `edit` damage the bytes, and returns the decode error message.
template <typename Edit>
std::string decode_error(const FrameHeader& h, Edit edit) {
  FrameHeaderBytes b = encode_frame_header(h);
  edit(b);
  auto r = decode_frame_header(b);
  EXPECT_FALSE(r.has_value());
  return r ? std::string() : r.error().message();
}

TEST(TransferFrame, RoundTripsEveryField) {
  FrameHeader h = sample_write();
  auto r = decode_frame_header(encode_frame_header(h));
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_EQ(r->op, FrameOp::kWrite);
  EXPECT_EQ(r->request_id, 42u);
  EXPECT_EQ(r->region, 3u);
  EXPECT_EQ(r->offset, 4096u);
  EXPECT_EQ(r->length, 100u);
  EXPECT_EQ(r->checksum, 0x1234u);
  EXPECT_EQ(frame_payload_bytes(*r), 100u);
  h.op = FrameOp::kRead;
  EXPECT_EQ(frame_payload_bytes(h), 0u);
}

TEST(TransferFrame, RejectsMalformedHeadersNamingTheField) {
  FrameHeader h = sample_write();
  EXPECT_NE(decode_error(h, [](FrameHeaderBytes& b) { b[0] = std::byte{'X'}; }).find("byte 0: magic"), std::string::npos);
  EXPECT_NE(decode_error(h, [](FrameHeaderBytes& b) { b[4] = std::byte{9}; }).find("byte 4: version 9, expected 1"),
            std::string::npos);
  EXPECT_NE(decode_error(h, [](FrameHeaderBytes& b) { b[6] = std::byte{0}; }).find("byte 6: opcode 0"), std::string::npos);
  EXPECT_NE(decode_error(h, [](FrameHeaderBytes& b) { b[6] = std::byte{77}; }).find("opcode 77"), std::string::npos);
  EXPECT_NE(decode_error(h, [](FrameHeaderBytes& b) { b[7] = std::byte{1}; }).find("byte 7: flags"), std::string::npos);
  EXPECT_NE(decode_error(h, [](FrameHeaderBytes& b) { b[22] = std::byte{1}; }).find("byte 22: reserved"),
            std::string::npos);
  EXPECT_NE(decode_error(h, [](FrameHeaderBytes& b) { b[20] = std::byte{1}; }).find("status 1 in a write request"),
            std::string::npos);
  // Length over the limit, zero-length write, overflowing range.
  FrameHeader big = h;
  big.length = kMaxFramePayload + 1;
  EXPECT_NE(decode_error(big, [](FrameHeaderBytes&) {}).find("byte 32"), std::string::npos);
  FrameHeader empty = h;
  empty.length = 0;
  EXPECT_NE(decode_error(empty, [](FrameHeaderBytes&) {}).find("write of 0 bytes"), std::string::npos);
  FrameHeader wrap = h;
  wrap.offset = ~uint64_t(0) - 10;
  EXPECT_NE(decode_error(wrap, [](FrameHeaderBytes&) {}).find("overflows"), std::string::npos);
  // Too short.
  FrameHeaderBytes b = encode_frame_header(h);
  auto r = decode_frame_header(std::span<const std::byte>(b.data(), 47));
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("47 bytes, expected 48"), std::string::npos);
}

TEST(TransferFrame, OpcodeRules) {
  FrameHeader flag;
  flag.op = FrameOp::kStoreFlag;
  flag.region = 1;
  flag.length = 4;
  EXPECT_NE(decode_error(flag, [](FrameHeaderBytes&) {}).find("store_flag length 4, expected 8"), std::string::npos);
  flag.length = 8;
  flag.offset = 12;
  EXPECT_NE(decode_error(flag, [](FrameHeaderBytes&) {}).find("multiple of 8"), std::string::npos);
  FrameHeader hello;
  hello.op = FrameOp::kHello;
  hello.length = kMaxSegmentName + 1;
  EXPECT_NE(decode_error(hello, [](FrameHeaderBytes&) {}).find("segment name of 1..64"), std::string::npos);
  hello.length = 4;
  hello.region = 2;
  EXPECT_NE(decode_error(hello, [](FrameHeaderBytes&) {}).find("hello with region 2"), std::string::npos);
  FrameHeader reply;
  reply.op = FrameOp::kReply;
  reply.status = 200;
  EXPECT_NE(decode_error(reply, [](FrameHeaderBytes&) {}).find("status 200"), std::string::npos);
  // ucx_connect carries nothing: the reply brings the address and keys.
  FrameHeader ucx;
  ucx.op = FrameOp::kUcxConnect;
  EXPECT_TRUE(decode_frame_header(encode_frame_header(ucx)));
  ucx.length = 3;
  EXPECT_NE(decode_error(ucx, [](FrameHeaderBytes&) {}).find("ucx_connect with region 0 offset 0 length 3"),
            std::string::npos);
}

TEST(TransferFrame, PayloadChecksumCatchesCorruptionAndTruncation) {
  std::vector<std::byte> payload(100, std::byte{7});
  FrameHeader h = sample_write();
  h.checksum = checksum64(payload);
  EXPECT_TRUE(verify_frame_payload(h, payload));
  payload[50] = std::byte{8};
  auto bad = verify_frame_payload(h, payload);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message().find("checksum"), std::string::npos);
  auto cut = verify_frame_payload(h, std::span(payload).first(60));
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message().find("60 bytes, expected 100 (truncated)"), std::string::npos);
}

TEST(TransferFrame, RegionTableAndErrorReplies) {
  std::vector<RegionEntry> regions = {{1, 4096}, {7, uint64_t(1) << 33}};
  auto bytes = encode_region_table(regions);
  auto back = decode_region_table(bytes);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[1].id, 7u);
  EXPECT_EQ((*back)[1].length, uint64_t(1) << 33);
  bytes.pop_back();
  EXPECT_FALSE(decode_region_table(bytes));
  EXPECT_FALSE(decode_region_table(std::span<const std::byte>()));

  std::string m = "region 3 is not registered";
  Error e = reply_error(reply_status(ErrorCode::kNotFound), std::as_bytes(std::span(m.data(), m.size())));
  EXPECT_EQ(e.code(), ErrorCode::kNotFound);
  EXPECT_EQ(e.message(), m);
}

TEST(TransferFrame, HandshakeFramesHaveFixedLengths) {
  FrameHeader h;
  h.op = FrameOp::kChallenge;
  h.length = kAuthBytes;
  ASSERT_TRUE(decode_frame_header(encode_frame_header(h)));
  h.length = 31;
  auto short_challenge = decode_frame_header(encode_frame_header(h));
  ASSERT_FALSE(short_challenge);
  EXPECT_NE(short_challenge.error().message().find("challenge length 31, expected 32"), std::string::npos);
  h.op = FrameOp::kAuth;
  h.length = 2 * kAuthBytes;
  ASSERT_TRUE(decode_frame_header(encode_frame_header(h)));
  h.region = 1;
  auto placed = decode_frame_header(encode_frame_header(h));
  ASSERT_FALSE(placed);
  EXPECT_NE(placed.error().message().find("auth with region 1"), std::string::npos);
  h.region = 0;
  h.status = 1;
  EXPECT_FALSE(decode_frame_header(encode_frame_header(h)));  // status only in replies

  AuthPayload auth;
  auth.client_nonce[0] = std::byte{1};
  auth.proof[31] = std::byte{2};
  auto bytes = encode_auth_payload(auth);
  auto back = decode_auth_payload(bytes);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->client_nonce, auth.client_nonce);
  EXPECT_EQ(back->proof, auth.proof);
  bytes.pop_back();
  EXPECT_FALSE(decode_auth_payload(bytes));

  std::vector<RegionEntry> regions = {{3, 4096}};
  auto reply = encode_auth_reply(auth.proof, regions);
  auto reply_back = decode_auth_reply(reply);
  ASSERT_TRUE(reply_back);
  EXPECT_EQ(reply_back->server_proof, auth.proof);
  ASSERT_EQ(reply_back->regions.size(), 1u);
  EXPECT_EQ(reply_back->regions[0].length, 4096u);
  EXPECT_FALSE(decode_auth_reply(std::span(reply).first(kAuthBytes - 1)));
  EXPECT_FALSE(decode_auth_reply(std::span(reply).first(kAuthBytes + 3)));
}

TEST(TransferFrame, SegmentNames) {
  EXPECT_TRUE(check_segment_name("decode-0.rank_1"));
  EXPECT_FALSE(check_segment_name(""));
  EXPECT_FALSE(check_segment_name(std::string(65, 'a')));
  auto slash = check_segment_name("a/b");
  ASSERT_FALSE(slash);
  EXPECT_NE(slash.error().message().find("byte 1"), std::string::npos);
}

}  // namespace
}  // namespace recur::transfer
