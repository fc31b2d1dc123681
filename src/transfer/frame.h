// The TCP transport's wire format: every message is a 48-byte header and a payload.
//
//   byte  0 u32 magic 'RKVT'   4 u16 version (1)   6 u8 opcode   7 u8 flags (0)
//   byte  8 u64 request id    16 u32 region        20 u16 status (replies; 0 = ok)  22 u16 reserved (0)
//   byte 24 u64 offset        32 u64 length        40 u64 checksum (XXH3-64 of the payload)
//
// All fields little-endian. Requests: kHello (payload: the segment name the client expects),
// kRead (no payload; length = bytes wanted), kWrite (payload = the data), kStoreFlag (payload =
// 8 bytes, stored with one release store at an 8-aligned offset: a KV block's ready flag).
// Each request gets one kReply with the same request id: status 0 and the data (kRead), the
// region table (kHello) or nothing; or status = ErrorCode + 1 and the error message.
// docs/transfer.md shows the exchange. Decoding is pure and fuzzed (fuzz/transfer_frame_fuzz.cc).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace recur::transfer {

inline constexpr uint32_t kFrameMagic = 0x54564B52;  // "RKVT" as little-endian bytes
inline constexpr uint16_t kFrameVersion = 1;
inline constexpr size_t kFrameHeaderBytes = 48;
inline constexpr uint64_t kMaxFramePayload = uint64_t(1) << 30;
inline constexpr size_t kMaxSegmentName = 64;

enum class FrameOp : uint8_t { kHello = 1, kRead = 2, kWrite = 3, kStoreFlag = 4, kReply = 5 };

struct FrameHeader {
  FrameOp op = FrameOp::kReply;
  uint64_t request_id = 0;
  uint32_t region = 0;
  uint16_t status = 0;  // replies: 0 ok, else ErrorCode + 1
  uint64_t offset = 0;
  uint64_t length = 0;
  uint64_t checksum = 0;
};

using FrameHeaderBytes = std::array<std::byte, kFrameHeaderBytes>;

FrameHeaderBytes encode_frame_header(const FrameHeader& header);
// Checks every field (magic, version, opcode, flags, reserved, status, length limits, per-opcode
// rules); errors name the byte offset of the offending field and what was expected.
Result<FrameHeader> decode_frame_header(std::span<const std::byte> bytes);
// Bytes that follow the header on the wire (a kRead request carries none).
uint64_t frame_payload_bytes(const FrameHeader& header);
// The payload's checksum against the header's.
Status verify_frame_payload(const FrameHeader& header, std::span<const std::byte> payload);

// A segment name: 1..64 bytes of [A-Za-z0-9._-].
Status check_segment_name(std::string_view name);

// The kHello reply payload: the regions a segment exposes. u32 count, then per region
// {u32 id, u32 reserved (0), u64 length}.
struct RegionEntry {
  uint32_t id = 0;
  uint64_t length = 0;
};
std::vector<std::byte> encode_region_table(std::span<const RegionEntry> regions);
Result<std::vector<RegionEntry>> decode_region_table(std::span<const std::byte> payload);

// The error a non-zero reply status and message stand for.
Error reply_error(uint16_t status, std::span<const std::byte> message);
uint16_t reply_status(ErrorCode code);

}  // namespace recur::transfer
