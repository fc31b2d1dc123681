// The UCX transport's active messages, used where the endpoint has no native RMA (UCX 1.13 over
// tcp: ucx_peer.h). Pure encoding (no UCX calls), so it builds, is tested and fuzzed without libucx.
//
// Block (AM id kUcxAmBlockId, sent with UCP_AM_SEND_FLAG_REPLY), a 40-byte header:
//   u32 kind (1 write, 2 store_flag), u32 region, u64 offset, u64 length, u64 link, u64 seq
// and the block's bytes as the message's data (eager, or rendezvous for large blocks: the target
// receives those with ucp_am_recv_data_nbx straight into the region).
// Ack (AM id kUcxAmAckId, to the reply endpoint once the bytes are in place), a 24-byte header:
//   u64 link, u64 seq, u32 code (0 applied, else ErrorCode + 1), u32 message bytes
// and the error message as data. `link` names the sender's connection, `seq` its request.
// All little-endian. The target trusts nothing in a header: the decoders check every field, and
// the target checks the region bounds against its own table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace recur::transfer {

inline constexpr unsigned kUcxAmBlockId = 0x5243;  // "RC"
inline constexpr unsigned kUcxAmAckId = 0x5244;
inline constexpr size_t kUcxAmBlockHeaderBytes = 40;
inline constexpr size_t kUcxAmAckHeaderBytes = 24;
inline constexpr size_t kMaxUcxAckMessageBytes = 4096;

enum class UcxAmKind : uint32_t { kWrite = 1, kStoreFlag = 2 };

struct UcxAmBlock {
  UcxAmKind kind = UcxAmKind::kWrite;
  uint32_t region = 0;
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t link = 0;
  uint64_t seq = 0;
};

struct UcxAmAck {
  uint64_t link = 0;
  uint64_t seq = 0;
  std::optional<Error> error;  // none: applied
};

std::array<std::byte, kUcxAmBlockHeaderBytes> encode_ucx_am_block(const UcxAmBlock& block);
// `data_bytes`: how many bytes the message carries; a header that disagrees with it is refused.
Result<UcxAmBlock> decode_ucx_am_block(std::span<const std::byte> header, uint64_t data_bytes);

std::array<std::byte, kUcxAmAckHeaderBytes> encode_ucx_am_ack_header(uint64_t link, uint64_t seq, const Error* error);
// The message an ack carries as data (empty when applied; else truncated to kMaxUcxAckMessageBytes).
std::string ucx_am_ack_message(const Error* error);
Result<UcxAmAck> decode_ucx_am_ack(std::span<const std::byte> header, std::span<const std::byte> message);

}  // namespace recur::transfer
