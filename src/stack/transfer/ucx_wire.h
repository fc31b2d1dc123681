// The reply to a kUcxConnect frame (frame.h): what a UCX client needs to reach a segment's memory
// one-sidedly. Pure encoding (no UCX calls), so it builds and is tested without libucx.
//
//   u32 address bytes, the server's UCP worker address (ucp_worker_get_address)
//   u32 region count, then per region:
//     u32 id, u32 rkey bytes, u64 base address (in the server's address space), u64 length, the
//     packed remote key (ucp_rkey_pack)
// All little-endian.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace recur::transfer {

inline constexpr size_t kMaxUcxAddressBytes = 64 * 1024;
inline constexpr size_t kMaxUcxRkeyBytes = 64 * 1024;

struct UcxRegionKey {
  uint32_t id = 0;
  uint64_t base = 0;
  uint64_t length = 0;
  std::vector<std::byte> rkey;
};

struct UcxConnectReply {
  std::vector<std::byte> worker_address;
  std::vector<UcxRegionKey> regions;
};

std::vector<std::byte> encode_ucx_connect_reply(const UcxConnectReply& reply);
// Errors name the byte offset and what was expected.
Result<UcxConnectReply> decode_ucx_connect_reply(std::span<const std::byte> payload);

}  // namespace recur::transfer
