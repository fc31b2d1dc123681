#include "transfer/ucx_am_wire.h"

#include <algorithm>

#include "transfer/wire_codec.h"

namespace recur::transfer {

namespace {

constexpr const char* kBlock = "ucx block header";
constexpr const char* kAck = "ucx ack";

template <size_t N>
std::array<std::byte, N> to_array(const std::vector<std::byte>& v) {
  std::array<std::byte, N> out{};
  std::copy_n(v.begin(), N, out.begin());
  return out;
}

}  // namespace

std::array<std::byte, kUcxAmBlockHeaderBytes> encode_ucx_am_block(const UcxAmBlock& block) {
  WireWriter out(kUcxAmBlockHeaderBytes);
  out.put<uint32_t>(uint32_t(block.kind));
  out.put<uint32_t>(block.region);
  out.put<uint64_t>(block.offset);
  out.put<uint64_t>(block.length);
  out.put<uint64_t>(block.link);
  out.put<uint64_t>(block.seq);
  return to_array<kUcxAmBlockHeaderBytes>(out.take());
}

Result<UcxAmBlock> decode_ucx_am_block(std::span<const std::byte> header, uint64_t data_bytes) {
  if (header.size() != kUcxAmBlockHeaderBytes)
    return parse_error("{} byte 0: {} bytes, expected {}", kBlock, header.size(), kUcxAmBlockHeaderBytes);
  WireReader in(header, kBlock);
  UcxAmBlock b;
  RECUR_ASSIGN_OR_RETURN(uint32_t kind, in.get<uint32_t>("the kind"));
  RECUR_ASSIGN_OR_RETURN(b.region, in.get<uint32_t>("the region"));
  RECUR_ASSIGN_OR_RETURN(b.offset, in.get<uint64_t>("the offset"));
  RECUR_ASSIGN_OR_RETURN(b.length, in.get<uint64_t>("the length"));
  RECUR_ASSIGN_OR_RETURN(b.link, in.get<uint64_t>("the link"));
  RECUR_ASSIGN_OR_RETURN(b.seq, in.get<uint64_t>("the sequence"));
  if (kind != uint32_t(UcxAmKind::kWrite) && kind != uint32_t(UcxAmKind::kStoreFlag))
    return parse_error("{} byte 0: kind {}, expected 1 (write) or 2 (store_flag)", kBlock, kind);
  b.kind = UcxAmKind(kind);
  if (b.region == 0) return parse_error("{} byte 4: region 0, expected >= 1", kBlock);
  if (b.length == 0 || b.length != data_bytes)
    return parse_error("{} byte 16: length {}, expected the {} bytes the message carries (at least 1)", kBlock,
                       b.length, data_bytes);
  if (b.offset + b.length < b.offset)
    return parse_error("{} byte 8: offset {} + length {} overflows", kBlock, b.offset, b.length);
  if (b.kind == UcxAmKind::kStoreFlag && (b.length != 8 || b.offset % 8 != 0))
    return parse_error("{} byte 8: store_flag at offset {} length {}, expected length 8 at an 8-aligned offset", kBlock,
                       b.offset, b.length);
  return b;
}

std::string ucx_am_ack_message(const Error* error) {
  if (error == nullptr) return {};
  if (error->message().empty()) return std::string(error_code_name(error->code()));  // an ack error is never empty
  return error->message().substr(0, kMaxUcxAckMessageBytes);
}

std::array<std::byte, kUcxAmAckHeaderBytes> encode_ucx_am_ack_header(uint64_t link, uint64_t seq, const Error* error) {
  WireWriter out(kUcxAmAckHeaderBytes);
  out.put<uint64_t>(link);
  out.put<uint64_t>(seq);
  out.put<uint32_t>(error == nullptr ? 0 : uint32_t(error->code()) + 1);
  out.put<uint32_t>(uint32_t(ucx_am_ack_message(error).size()));
  return to_array<kUcxAmAckHeaderBytes>(out.take());
}

Result<UcxAmAck> decode_ucx_am_ack(std::span<const std::byte> header, std::span<const std::byte> message) {
  if (header.size() != kUcxAmAckHeaderBytes)
    return parse_error("{} byte 0: header of {} bytes, expected {}", kAck, header.size(), kUcxAmAckHeaderBytes);
  WireReader in(header, kAck);
  UcxAmAck a;
  RECUR_ASSIGN_OR_RETURN(a.link, in.get<uint64_t>("the link"));
  RECUR_ASSIGN_OR_RETURN(a.seq, in.get<uint64_t>("the sequence"));
  RECUR_ASSIGN_OR_RETURN(uint32_t code, in.get<uint32_t>("the code"));
  RECUR_ASSIGN_OR_RETURN(uint32_t message_bytes, in.get<uint32_t>("the message length"));
  if (code > uint32_t(ErrorCode::kInternal) + 1)
    return parse_error("{} byte 16: code {}, expected 0..{}", kAck, code, uint32_t(ErrorCode::kInternal) + 1);
  if (message_bytes != message.size() || message_bytes > kMaxUcxAckMessageBytes || (code == 0) != (message_bytes == 0))
    return parse_error("{} byte 20: message of {} bytes with code {}, expected the {} bytes carried (none when 0, "
                       "else 1..{})", kAck, message_bytes, code, message.size(), kMaxUcxAckMessageBytes);
  if (code != 0)
    a.error = Error(ErrorCode(code - 1), std::string(reinterpret_cast<const char*>(message.data()), message.size()));
  return a;
}

}  // namespace recur::transfer
