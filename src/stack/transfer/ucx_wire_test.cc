#include "transfer/ucx_wire.h"

#include <gtest/gtest.h>

namespace recur::transfer {
namespace {

std::vector<std::byte> bytes_of(std::initializer_list<int> v) {
  std::vector<std::byte> out;
  for (int b : v) out.push_back(std::byte(b));
  return out;
}

TEST(UcxWire, RoundTripsAddressAndKeys) {
  UcxConnectReply reply{bytes_of({1, 2, 3}), {{1, 0x1000, 4096, bytes_of({9, 8})}, {7, 0x7f0000, 1 << 20, bytes_of({5})}}};
  auto decoded = decode_ucx_connect_reply(encode_ucx_connect_reply(reply));
  ASSERT_TRUE(decoded) << decoded.error().message();
  EXPECT_EQ(decoded->worker_address, reply.worker_address);
  ASSERT_EQ(decoded->regions.size(), 2u);
  EXPECT_EQ(decoded->regions[1].id, 7u);
  EXPECT_EQ(decoded->regions[1].base, 0x7f0000u);
  EXPECT_EQ(decoded->regions[1].length, 1u << 20);
  EXPECT_EQ(decoded->regions[0].rkey, bytes_of({9, 8}));
}

TEST(UcxWire, MalformedRepliesNameTheByte) {
  UcxConnectReply reply{bytes_of({1, 2, 3}), {{1, 0x1000, 4096, bytes_of({9, 8})}}};
  std::vector<std::byte> good = encode_ucx_connect_reply(reply);
  auto cut = decode_ucx_connect_reply(std::span(good).first(good.size() - 1));
  ASSERT_FALSE(cut);
  EXPECT_NE(cut.error().message().find("a remote key needs 2 bytes, 1 left"), std::string::npos) << cut.error().message();
  std::vector<std::byte> extra = good;
  extra.push_back(std::byte{0});
  EXPECT_FALSE(decode_ucx_connect_reply(extra));
  std::vector<std::byte> huge_count = good;
  huge_count[7 + 3] = std::byte{0xff};  // the region count's top byte (after u32 length + 3 address bytes)
  auto lie = decode_ucx_connect_reply(huge_count);
  ASSERT_FALSE(lie);
  EXPECT_NE(lie.error().message().find("byte 7"), std::string::npos) << lie.error().message();
  UcxConnectReply zero = reply;
  zero.regions[0].id = 0;
  EXPECT_FALSE(decode_ucx_connect_reply(encode_ucx_connect_reply(zero)));
  EXPECT_FALSE(decode_ucx_connect_reply({})) << "empty";
}

}  // namespace
}  // namespace recur::transfer
