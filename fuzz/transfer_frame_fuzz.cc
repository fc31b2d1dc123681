// The KV transfer protocol's decoding (src/stack/transfer/frame.h), fed arbitrary bytes: a header
// either decodes to fields that encode back to the same 48 bytes, or is rejected with an error;
// payload checks, region tables, error replies, the handshake's auth payloads and authenticated
// hello replies (peer authentication), segment names and UCX connect replies (ucx_wire.h: a worker
// address and remote keys from the peer) and the UCX active-message block headers and acks
// (ucx_am_wire.h: headers a hostile sender chooses) never crash; what decodes encodes back to the
// same bytes.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string_view>

#include "transfer/frame.h"
#include "transfer/ucx_am_wire.h"
#include "transfer/ucx_wire.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace recur::transfer;
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto header = decode_frame_header(bytes);
  if (header) {
    FrameHeaderBytes again = encode_frame_header(*header);
    if (std::memcmp(again.data(), data, kFrameHeaderBytes) != 0) std::abort();
    std::span<const std::byte> rest = bytes.subspan(kFrameHeaderBytes);
    (void)verify_frame_payload(*header, rest);
    if (header->op == FrameOp::kReply && header->status != 0) (void)reply_error(header->status, rest);
  } else if (header.error().message().empty()) {
    std::abort();
  }
  auto table = decode_region_table(bytes);
  if (table && encode_region_table(*table).size() != size) std::abort();
  if (auto auth = decode_auth_payload(bytes); auth && encode_auth_payload(*auth).size() != size) std::abort();
  if (auto reply = decode_auth_reply(bytes)) {
    auto again = encode_auth_reply(reply->server_proof, reply->regions);
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
  }
  if (auto ucx = decode_ucx_connect_reply(bytes)) {
    auto again = encode_ucx_connect_reply(*ucx);
    if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
  } else if (ucx.error().message().empty()) {
    std::abort();
  }
  // Block header: the first 40 bytes, the rest as the data it carries.
  const size_t block_bytes = std::min(size, kUcxAmBlockHeaderBytes);
  if (auto block = decode_ucx_am_block(bytes.first(block_bytes), size - block_bytes)) {
    auto again = encode_ucx_am_block(*block);
    if (std::memcmp(again.data(), data, again.size()) != 0) std::abort();
  } else if (block.error().message().empty()) {
    std::abort();
  }
  // Ack: the first 24 bytes, the rest as its message.
  const size_t ack_bytes = std::min(size, kUcxAmAckHeaderBytes);
  if (auto ack = decode_ucx_am_ack(bytes.first(ack_bytes), bytes.subspan(ack_bytes))) {
    const recur::Error* why = ack->error ? &*ack->error : nullptr;
    auto again = encode_ucx_am_ack_header(ack->link, ack->seq, why);
    if (std::memcmp(again.data(), data, again.size()) != 0) std::abort();
    if (ucx_am_ack_message(why).size() != size - ack_bytes) std::abort();
  } else if (ack.error().message().empty()) {
    std::abort();
  }
  (void)check_segment_name(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
