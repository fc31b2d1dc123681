#include "transfer/kv_block.h"

#include <atomic>
#include <cstring>

#include "transfer/checksum.h"

namespace recur::transfer {
namespace {

uint64_t kv_block_seed_of(const KvBlockId& id, uint64_t generation) {
  return generation * 0x9E3779B97F4A7C15ull ^ uint64_t(id.seq) * 0xC2B2AE3D27D4EB4Full ^
         (uint64_t(uint32_t(id.layer)) << 32 | uint32_t(id.block)) * 0x165667B19E3779F9ull;
}

std::atomic_ref<uint64_t> kv_ready_word(const std::byte* slot) {
  return std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(const_cast<std::byte*>(slot)));
}

}  // namespace

uint64_t kv_block_checksum_seed(const KvBlockId& id, uint64_t generation) { return kv_block_seed_of(id, generation); }

size_t kv_block_slot_bytes(size_t payload_bytes) {
  return kKvBlockHeaderBytes + (payload_bytes + kKvBlockHeaderBytes - 1) / kKvBlockHeaderBytes * kKvBlockHeaderBytes;
}

uint64_t kv_block_flow_id(const KvBlockId& id) {
  return (uint64_t(1) << 63) | (uint64_t(id.seq) & 0x1FFFFFF) << 38 | (uint64_t(id.layer) & 0x3FFF) << 24 |
         (uint64_t(id.block) & 0xFFFFFF);
}

KvBlockFields make_kv_block_fields(const KvBlockId& id, uint64_t generation, std::span<const std::byte> payload) {
  KvBlockFields f;
  f.seq = id.seq;
  f.layer = id.layer;
  f.block = id.block;
  f.length = payload.size();
  f.generation = generation;
  f.checksum = checksum64(payload, kv_block_seed_of(id, generation));
  return f;
}

void write_kv_block(std::byte* slot, const KvBlockId& id, uint64_t generation, std::span<const std::byte> payload) {
  KvBlockFields f = make_kv_block_fields(id, generation, payload);
  std::memcpy(slot + kKvBlockHeaderBytes, payload.data(), payload.size());
  std::memcpy(slot + 8, &f, sizeof f);
  kv_ready_word(slot).store(generation, std::memory_order_release);
}

uint64_t kv_block_ready(const std::byte* slot) { return kv_ready_word(slot).load(std::memory_order_acquire); }

Result<bool> try_read_kv_block(const std::byte* slot, size_t slot_bytes, const KvBlockId& id, uint64_t generation,
                               std::span<std::byte> out) {
  if (kv_block_ready(slot) != generation) return false;
  auto where = [&] { return fmt::format("kv block seq {} layer {} block {} generation {}", id.seq, id.layer, id.block, generation); };
  KvBlockFields f;
  std::memcpy(&f, slot + 8, sizeof f);
  if (f.magic != kKvBlockMagic || f.version != kKvBlockVersion)
    return parse_error("{}: header magic {:#x} version {}, expected {:#x} version {}", where(), f.magic, f.version,
                       kKvBlockMagic, kKvBlockVersion);
  if (f.seq != id.seq || f.layer != id.layer || f.block != id.block || f.generation != generation)
    return parse_error("{}: header says seq {} layer {} block {} generation {}", where(), f.seq, f.layer, f.block,
                       f.generation);
  if (f.length > slot_bytes - kKvBlockHeaderBytes)
    return parse_error("{}: length {} does not fit its slot of {} bytes (truncated)", where(), f.length, slot_bytes);
  if (f.length != out.size())
    return parse_error("{}: length {}, expected {} (truncated or wrong layout)", where(), f.length, out.size());
  std::memcpy(out.data(), slot + kKvBlockHeaderBytes, out.size());
  uint64_t sum = checksum64(out, kv_block_seed_of(id, generation));
  if (sum != f.checksum)
    return parse_error("{}: checksum {:#018x}, header says {:#018x} ({} bytes): corrupted or incomplete", where(), sum,
                       f.checksum, f.length);
  // Best effort only (a slot must not be rewritten while read; the caller's protocol): no fence,
  // which ThreadSanitizer does not model (-Wtsan).
  if (kv_ready_word(slot).load(std::memory_order_acquire) != generation)
    return parse_error("{}: the slot was republished while being read", where());
  return true;
}

}  // namespace recur::transfer
