#include "transfer/ucx_wire.h"

#include "transfer/wire_codec.h"

namespace recur::transfer {

std::vector<std::byte> encode_ucx_connect_reply(const UcxConnectReply& reply) {
  size_t bytes = 8 + reply.worker_address.size();
  for (const UcxRegionKey& r : reply.regions) bytes += 24 + r.rkey.size();
  WireWriter out(bytes);
  out.put<uint32_t>(uint32_t(reply.worker_address.size()));
  out.bytes(reply.worker_address);
  out.put<uint32_t>(uint32_t(reply.regions.size()));
  for (const UcxRegionKey& r : reply.regions) {
    out.put<uint32_t>(r.id);
    out.put<uint32_t>(uint32_t(r.rkey.size()));
    out.put<uint64_t>(r.base);
    out.put<uint64_t>(r.length);
    out.bytes(r.rkey);
  }
  return out.take();
}

Result<UcxConnectReply> decode_ucx_connect_reply(std::span<const std::byte> payload) {
  WireReader in(payload, "ucx connect reply");
  UcxConnectReply reply;
  const size_t address_at = in.at();
  RECUR_ASSIGN_OR_RETURN(uint32_t address_bytes, in.get<uint32_t>("the address length"));
  if (address_bytes == 0 || address_bytes > kMaxUcxAddressBytes)
    return parse_error("ucx connect reply byte {}: worker address of {} bytes, expected 1..{}", address_at,
                       address_bytes, kMaxUcxAddressBytes);
  RECUR_ASSIGN_OR_RETURN(reply.worker_address, in.bytes(address_bytes, "the worker address"));
  RECUR_ASSIGN_OR_RETURN(uint32_t count, in.get<uint32_t>("the region count"));
  // Each region takes at least 24 bytes: a count beyond what is left is a lie, not an allocation.
  if (count > in.left() / 24)
    return parse_error("ucx connect reply byte {}: {} regions, but only {} bytes follow", in.at() - 4, count, in.left());
  for (uint32_t i = 0; i < count; ++i) {
    UcxRegionKey r;
    const size_t region_at = in.at();
    RECUR_ASSIGN_OR_RETURN(r.id, in.get<uint32_t>("a region id"));
    RECUR_ASSIGN_OR_RETURN(uint32_t rkey_bytes, in.get<uint32_t>("a remote key length"));
    RECUR_ASSIGN_OR_RETURN(r.base, in.get<uint64_t>("a region base"));
    RECUR_ASSIGN_OR_RETURN(r.length, in.get<uint64_t>("a region length"));
    if (r.id == 0) return parse_error("ucx connect reply byte {}: region id 0, expected >= 1", region_at);
    if (rkey_bytes == 0 || rkey_bytes > kMaxUcxRkeyBytes)
      return parse_error("ucx connect reply byte {}: remote key of {} bytes, expected 1..{}", region_at + 4, rkey_bytes,
                         kMaxUcxRkeyBytes);
    if (r.base + r.length < r.base)
      return parse_error("ucx connect reply byte {}: region {} base {:#x} + length {} overflows", region_at + 8, r.id,
                         r.base, r.length);
    RECUR_ASSIGN_OR_RETURN(r.rkey, in.bytes(rkey_bytes, "a remote key"));
    reply.regions.push_back(std::move(r));
  }
  if (in.left() != 0)
    return parse_error("ucx connect reply byte {}: {} bytes after the last region, expected none", in.at(), in.left());
  return reply;
}

}  // namespace recur::transfer
