#include "transfer/frame.h"

#include <cstring>

#include "transfer/checksum.h"

namespace recur::transfer {
namespace {

// Little-endian field access; x86 is little-endian, memcpy keeps it alignment-safe.
template <typename T>
void frame_put(std::byte* out, size_t at, T v) {
  std::memcpy(out + at, &v, sizeof v);
}
template <typename T>
T frame_get(std::span<const std::byte> in, size_t at) {
  T v;
  std::memcpy(&v, in.data() + at, sizeof v);
  return v;
}

constexpr int kLastErrorCode = int(ErrorCode::kInternal);

const char* frame_op_name(FrameOp op) {
  switch (op) {
    case FrameOp::kHello: return "hello";
    case FrameOp::kRead: return "read";
    case FrameOp::kWrite: return "write";
    case FrameOp::kStoreFlag: return "store_flag";
    case FrameOp::kReply: return "reply";
    case FrameOp::kChallenge: return "challenge";
    case FrameOp::kAuth: return "auth";
    case FrameOp::kUcxConnect: return "ucx_connect";
  }
  return "?";
}

}  // namespace

FrameHeaderBytes encode_frame_header(const FrameHeader& h) {
  FrameHeaderBytes b{};
  frame_put<uint32_t>(b.data(), 0, kFrameMagic);
  frame_put<uint16_t>(b.data(), 4, kFrameVersion);
  frame_put<uint8_t>(b.data(), 6, uint8_t(h.op));
  frame_put<uint8_t>(b.data(), 7, 0);
  frame_put<uint64_t>(b.data(), 8, h.request_id);
  frame_put<uint32_t>(b.data(), 16, h.region);
  frame_put<uint16_t>(b.data(), 20, h.status);
  frame_put<uint16_t>(b.data(), 22, 0);
  frame_put<uint64_t>(b.data(), 24, h.offset);
  frame_put<uint64_t>(b.data(), 32, h.length);
  frame_put<uint64_t>(b.data(), 40, h.checksum);
  return b;
}

Result<FrameHeader> decode_frame_header(std::span<const std::byte> b) {
  if (b.size() < kFrameHeaderBytes)
    return parse_error("frame header: {} bytes, expected {}", b.size(), kFrameHeaderBytes);
  if (uint32_t magic = frame_get<uint32_t>(b, 0); magic != kFrameMagic)
    return parse_error("frame byte 0: magic {:#010x}, expected {:#010x} ('RKVT')", magic, kFrameMagic);
  if (uint16_t version = frame_get<uint16_t>(b, 4); version != kFrameVersion)
    return parse_error("frame byte 4: version {}, expected {}", version, kFrameVersion);
  uint8_t op = frame_get<uint8_t>(b, 6);
  if (op < uint8_t(FrameOp::kHello) || op > kLastFrameOp)
    return parse_error("frame byte 6: opcode {}, expected 1..8 (hello, read, write, store_flag, reply, challenge, auth, "
                       "ucx_connect)",
                       op);
  if (uint8_t flags = frame_get<uint8_t>(b, 7); flags != 0)
    return parse_error("frame byte 7: flags {:#04x}, expected 0", flags);
  if (uint16_t reserved = frame_get<uint16_t>(b, 22); reserved != 0)
    return parse_error("frame byte 22: reserved {}, expected 0", reserved);
  FrameHeader h;
  h.op = FrameOp(op);
  h.request_id = frame_get<uint64_t>(b, 8);
  h.region = frame_get<uint32_t>(b, 16);
  h.status = frame_get<uint16_t>(b, 20);
  h.offset = frame_get<uint64_t>(b, 24);
  h.length = frame_get<uint64_t>(b, 32);
  h.checksum = frame_get<uint64_t>(b, 40);
  const char* name = frame_op_name(h.op);
  if (h.op != FrameOp::kReply && h.status != 0)
    return parse_error("frame byte 20: status {} in a {} request, expected 0", h.status, name);
  if (h.status > kLastErrorCode + 1)
    return parse_error("frame byte 20: status {}, expected 0..{}", h.status, kLastErrorCode + 1);
  if (h.length > kMaxFramePayload)
    return parse_error("frame byte 32: {} length {}, expected at most {}", name, h.length, kMaxFramePayload);
  switch (h.op) {
    case FrameOp::kHello:
      if (h.length == 0 || h.length > kMaxSegmentName)
        return parse_error("frame byte 32: hello length {}, expected a segment name of 1..{} bytes",
                           h.length, kMaxSegmentName);
      if (h.region != 0 || h.offset != 0)
        return parse_error("frame byte 16: hello with region {} offset {}, expected 0 and 0", h.region, h.offset);
      break;
    case FrameOp::kRead:
    case FrameOp::kWrite:
      if (h.length == 0) return parse_error("frame byte 32: {} of 0 bytes, expected at least 1", name);
      if (h.offset + h.length < h.offset)
        return parse_error("frame byte 24: {} offset {} + length {} overflows", name, h.offset, h.length);
      break;
    case FrameOp::kStoreFlag:
      if (h.length != 8) return parse_error("frame byte 32: store_flag length {}, expected 8", h.length);
      if (h.offset % 8 != 0) return parse_error("frame byte 24: store_flag offset {}, expected a multiple of 8", h.offset);
      break;
    case FrameOp::kChallenge:
    case FrameOp::kAuth: {
      const uint64_t expected = h.op == FrameOp::kChallenge ? kAuthBytes : 2 * kAuthBytes;
      if (h.length != expected) return parse_error("frame byte 32: {} length {}, expected {}", name, h.length, expected);
      if (h.region != 0 || h.offset != 0)
        return parse_error("frame byte 16: {} with region {} offset {}, expected 0 and 0", name, h.region, h.offset);
      break;
    }
    case FrameOp::kUcxConnect:
      if (h.length != 0 || h.region != 0 || h.offset != 0)
        return parse_error("frame byte 16: ucx_connect with region {} offset {} length {}, expected 0, 0 and 0",
                           h.region, h.offset, h.length);
      break;
    case FrameOp::kReply:
      break;
  }
  return h;
}

uint64_t frame_payload_bytes(const FrameHeader& h) { return h.op == FrameOp::kRead ? 0 : h.length; }

Status verify_frame_payload(const FrameHeader& h, std::span<const std::byte> payload) {
  if (payload.size() != frame_payload_bytes(h))
    return parse_error("{} request {}: payload of {} bytes, expected {} (truncated)", frame_op_name(h.op),
                       h.request_id, payload.size(), frame_payload_bytes(h));
  uint64_t sum = checksum64(payload);
  if (sum != h.checksum)
    return parse_error("{} request {}: payload checksum {:#018x}, header says {:#018x} (region {} offset {} length {})",
                       frame_op_name(h.op), h.request_id, sum, h.checksum, h.region, h.offset, h.length);
  return ok_status();
}

Status check_segment_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxSegmentName)
    return invalid_argument("segment name '{}': {} bytes, expected 1..{}", name, name.size(), kMaxSegmentName);
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
              c == '_' || c == '-';
    if (!ok)
      return invalid_argument("segment name '{}': byte {} is {:#04x}, expected [A-Za-z0-9._-]", name, i,
                              uint8_t(c));
  }
  return ok_status();
}

std::vector<std::byte> encode_region_table(std::span<const RegionEntry> regions) {
  std::vector<std::byte> out(4 + regions.size() * 16);
  frame_put<uint32_t>(out.data(), 0, uint32_t(regions.size()));
  for (size_t i = 0; i < regions.size(); ++i) {
    frame_put<uint32_t>(out.data(), 4 + i * 16, regions[i].id);
    frame_put<uint32_t>(out.data(), 8 + i * 16, 0);
    frame_put<uint64_t>(out.data(), 12 + i * 16, regions[i].length);
  }
  return out;
}

Result<std::vector<RegionEntry>> decode_region_table(std::span<const std::byte> p) {
  if (p.size() < 4) return parse_error("region table: {} bytes, expected at least 4", p.size());
  uint32_t count = frame_get<uint32_t>(p, 0);
  if (p.size() != 4 + uint64_t(count) * 16)
    return parse_error("region table: {} bytes for {} regions, expected {}", p.size(), count, 4 + uint64_t(count) * 16);
  std::vector<RegionEntry> out(count);
  for (size_t i = 0; i < count; ++i) {
    out[i].id = frame_get<uint32_t>(p, 4 + i * 16);
    if (uint32_t reserved = frame_get<uint32_t>(p, 8 + i * 16); reserved != 0)
      return parse_error("region table: byte {}: reserved {}, expected 0", 8 + i * 16, reserved);
    out[i].length = frame_get<uint64_t>(p, 12 + i * 16);
  }
  return out;
}

std::vector<std::byte> encode_auth_payload(const AuthPayload& auth) {
  std::vector<std::byte> out(auth.client_nonce.begin(), auth.client_nonce.end());
  out.insert(out.end(), auth.proof.begin(), auth.proof.end());
  return out;
}

Result<AuthPayload> decode_auth_payload(std::span<const std::byte> p) {
  if (p.size() != 2 * kAuthBytes)
    return parse_error("auth: {} bytes, expected {} (a nonce and a proof)", p.size(), 2 * kAuthBytes);
  AuthPayload auth;
  std::memcpy(auth.client_nonce.data(), p.data(), kAuthBytes);
  std::memcpy(auth.proof.data(), p.data() + kAuthBytes, kAuthBytes);
  return auth;
}

std::vector<std::byte> encode_auth_reply(const AuthBytes& server_proof, std::span<const RegionEntry> regions) {
  std::vector<std::byte> out(server_proof.begin(), server_proof.end());
  std::vector<std::byte> table = encode_region_table(regions);
  out.insert(out.end(), table.begin(), table.end());
  return out;
}

Result<AuthReply> decode_auth_reply(std::span<const std::byte> p) {
  if (p.size() < kAuthBytes)
    return parse_error("auth reply: {} bytes, expected the server's {}-byte proof and a region table", p.size(), kAuthBytes);
  AuthReply reply;
  std::memcpy(reply.server_proof.data(), p.data(), kAuthBytes);
  RECUR_ASSIGN_OR_RETURN(reply.regions, decode_region_table(p.subspan(kAuthBytes)));
  return reply;
}

uint16_t reply_status(ErrorCode code) { return uint16_t(int(code) + 1); }

Error reply_error(uint16_t status, std::span<const std::byte> message) {
  ErrorCode code = status >= 1 && status <= kLastErrorCode + 1 ? ErrorCode(status - 1) : ErrorCode::kInternal;
  return Error(code, std::string(reinterpret_cast<const char*>(message.data()), message.size()));
}

}  // namespace recur::transfer
