// The active-message wire format (ucx_am_wire.h) and the lane text (ucx_lanes.h): pure, no UCX.
#include "transfer/ucx_am_wire.h"

#include <gtest/gtest.h>

#include <cstring>

#include "transfer/ucx_lanes.h"

namespace recur::transfer {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(UcxAmWire, BlockHeadersRoundTrip) {
  const UcxAmBlock block{UcxAmKind::kWrite, 3, 4096, 1 << 20, 7, 42};
  auto h = encode_ucx_am_block(block);
  auto back = decode_ucx_am_block(h, 1 << 20);
  ASSERT_TRUE(back) << back.error().message();
  EXPECT_EQ(back->kind, UcxAmKind::kWrite);
  EXPECT_EQ(back->region, 3u);
  EXPECT_EQ(back->offset, 4096u);
  EXPECT_EQ(back->length, 1u << 20);
  EXPECT_EQ(back->link, 7u);
  EXPECT_EQ(back->seq, 42u);
}

// What a hostile or broken sender could put in a header is refused, naming the byte.
TEST(UcxAmWire, HostileBlockHeadersAreRefused) {
  auto refused = [](const UcxAmBlock& b, uint64_t carried) {
    auto r = decode_ucx_am_block(encode_ucx_am_block(b), carried);
    return r ? std::string() : r.error().message();
  };
  EXPECT_TRUE(contains(refused({UcxAmKind(9), 1, 0, 8, 1, 1}, 8), "byte 0: kind 9"));
  EXPECT_TRUE(contains(refused({UcxAmKind::kWrite, 0, 0, 8, 1, 1}, 8), "byte 4: region 0"));
  EXPECT_TRUE(contains(refused({UcxAmKind::kWrite, 1, 0, 1 << 20, 1, 1}, 16), "byte 16: length 1048576, expected the 16"));
  EXPECT_TRUE(contains(refused({UcxAmKind::kWrite, 1, 0, 0, 1, 1}, 0), "byte 16: length 0"));
  EXPECT_TRUE(contains(refused({UcxAmKind::kWrite, 1, ~uint64_t(0) - 3, 8, 1, 1}, 8), "byte 8: offset"));
  EXPECT_TRUE(contains(refused({UcxAmKind::kStoreFlag, 1, 4, 8, 1, 1}, 8), "8-aligned"));
  EXPECT_TRUE(contains(refused({UcxAmKind::kStoreFlag, 1, 8, 16, 1, 1}, 16), "expected length 8"));
  auto h = encode_ucx_am_block({UcxAmKind::kWrite, 1, 0, 8, 1, 1});
  auto short_header = decode_ucx_am_block(std::span(h).first(39), 8);
  ASSERT_FALSE(short_header);
  EXPECT_TRUE(contains(short_header.error().message(), "39 bytes, expected 40")) << short_header.error().message();
}

TEST(UcxAmWire, AcksCarryTheErrorOrNone) {
  auto ok_header = encode_ucx_am_ack_header(5, 9, nullptr);
  auto ok = decode_ucx_am_ack(ok_header, {});
  ASSERT_TRUE(ok) << ok.error().message();
  EXPECT_EQ(ok->link, 5u);
  EXPECT_EQ(ok->seq, 9u);
  EXPECT_FALSE(ok->error);
  const Error why(ErrorCode::kNotFound, "segment s: region 4 (offset 0, length 8) is not registered");
  auto header = encode_ucx_am_ack_header(5, 10, &why);
  const std::string message = ucx_am_ack_message(&why);
  auto failed = decode_ucx_am_ack(header, std::as_bytes(std::span(message)));
  ASSERT_TRUE(failed) << failed.error().message();
  ASSERT_TRUE(failed->error);
  EXPECT_EQ(failed->error->code(), ErrorCode::kNotFound);
  EXPECT_EQ(failed->error->message(), why.message());
  // The message length must match what is carried; codes beyond ErrorCode are refused.
  EXPECT_FALSE(decode_ucx_am_ack(header, {}));
  auto bad_code = header;
  const uint32_t code = 200;
  std::memcpy(bad_code.data() + 16, &code, 4);
  auto refused = decode_ucx_am_ack(bad_code, std::as_bytes(std::span(message)));
  ASSERT_FALSE(refused);
  EXPECT_TRUE(contains(refused.error().message(), "byte 16: code 200")) << refused.error().message();
}

// ucp_ep_print_info's text, as UCX 1.13.1 prints it here (context with RMA and AM features).
TEST(UcxLanes, NativeRmaIsToldFromEmulated) {
  const std::string shm =
      "#                 lane[0]:  3:sysv/memory.0 md[2]           -> md[2]/sysv/sysdev[255] am am_bw#0\n"
      "#                 lane[1]:  4:posix/memory.0 md[3]          -> md[3]/posix/sysdev[255]\n"
      "#                 lane[2]:  5:cma/memory.0 md[4]            -> md[4]/cma/sysdev[255] rma_bw#0\n"
      "#                 am_send: 0..<egr/short>..93..<egr/bcopy>..8256..<rndv>..(inf)\n"
      "#                  put[0]: 0..<short>..4294967296..<bcopy>..(inf)\n"
      "#                  get[0]: 0..<bcopy>..(inf)\n";
  const std::string tcp =
      "#                 lane[0]:  0:tcp/lo.0 md[0]                -> md[0]/tcp/sysdev[255] rma_bw#0 am am_bw#0\n"
      "#                 lane[1]:  1:tcp/eth0.0 md[0]              -> md[0]/tcp/sysdev[255] rma_bw#1 wireup\n"
      "#                 am_send: 0..<egr/short>..8185..<egr/zcopy>..8192..<rndv>..(inf)\n"
      "#                  rma_bw: mds [0] rndv_rkey_size 10\n";
  EXPECT_TRUE(ucx_lanes_have_rma(shm));
  EXPECT_FALSE(ucx_lanes_have_rma(tcp)) << "rma_bw# marks rendezvous lanes, not RMA";
  EXPECT_FALSE(ucx_lanes_have_rma("no lanes at all; put[x]: not a lane"));
  EXPECT_EQ(ucx_lane_transports(shm), "cma/memory.0, posix/memory.0, sysv/memory.0");
  EXPECT_EQ(ucx_lane_transports(tcp), "tcp/eth0.0, tcp/lo.0");
}

}  // namespace
}  // namespace recur::transfer
