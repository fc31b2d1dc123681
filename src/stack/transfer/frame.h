// The TCP transport's wire format: every message is a 48-byte header and a payload.
//
//   byte  0 u32 magic 'RKVT'   4 u16 version (1)   6 u8 opcode   7 u8 flags (0)
//   byte  8 u64 request id    16 u32 region        20 u16 status (replies; 0 = ok)  22 u16 reserved (0)
//   byte 24 u64 offset        32 u64 length        40 u64 checksum (XXH3-64 of the payload)
//
// All fields little-endian. Requests: kHello (payload: the segment name the client expects),
// kAuth (the answer to a kChallenge: see "Peer authentication" below), kRead (no payload; length = bytes wanted), kWrite (payload = the data), kStoreFlag (payload =
// 8 bytes, stored with one release store at an 8-aligned offset: a KV block's ready flag).
// Each request gets one kReply with the same request id: status 0 and the data (kRead), the
// region table (kHello) or nothing; or status = ErrorCode + 1 and the error message.
//
// Peer authentication (a server with a peer key, peer_auth.h): the server answers kHello with a
// kChallenge (payload: a 32-byte random nonce) instead of the region table; the client sends
// kAuth (payload: its own 32-byte nonce, then HMAC-SHA256 of the key over the server's nonce and
// the segment name); the server answers with a kReply whose payload is its proof (the HMAC over
// the client's nonce) followed by the region table (encode_auth_reply). Nothing else is served
// before that exchange succeeds.
//
// UCX (ucx_peer.h): on an authenticated connection the client may send kUcxConnect (no payload);
// the reply carries the server's UCP worker address and a remote key per region (ucx_wire.h), so
// the UCX connection setup is guarded by the same handshake. The connection then stays open: its
// close tells the client the peer is gone.
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

enum class FrameOp : uint8_t {
  kHello = 1,
  kRead = 2,
  kWrite = 3,
  kStoreFlag = 4,
  kReply = 5,
  kChallenge = 6,  // server -> client: the nonce to prove the peer key over
  kAuth = 7,       // client -> server: its nonce and its proof
  kUcxConnect = 8,  // client -> server, after the handshake: UCX address and remote keys wanted (ucx_wire.h)
};
inline constexpr uint8_t kLastFrameOp = uint8_t(FrameOp::kUcxConnect);

// The handshake's nonces and proofs (HMAC-SHA256) are 32 bytes each.
inline constexpr size_t kAuthBytes = 32;
using AuthBytes = std::array<std::byte, kAuthBytes>;

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

// kAuth's payload: the client's nonce, then its proof.
struct AuthPayload {
  AuthBytes client_nonce{};
  AuthBytes proof{};
};
std::vector<std::byte> encode_auth_payload(const AuthPayload& auth);
Result<AuthPayload> decode_auth_payload(std::span<const std::byte> payload);
// The reply to a successful kAuth: the server's proof, then the region table.
struct AuthReply {
  AuthBytes server_proof{};
  std::vector<RegionEntry> regions;
};
std::vector<std::byte> encode_auth_reply(const AuthBytes& server_proof, std::span<const RegionEntry> regions);
Result<AuthReply> decode_auth_reply(std::span<const std::byte> payload);

// The error a non-zero reply status and message stand for.
Error reply_error(uint16_t status, std::span<const std::byte> message);
uint16_t reply_status(ErrorCode code);

}  // namespace recur::transfer
