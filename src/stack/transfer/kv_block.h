// The unit of KV transfer: a block (e.g. one layer's K/V pages of one sequence) in a slot of
// a receive area, with a header that makes a partial or stale block detectable.
//
//   byte  0 u64 ready       0, or the generation once the block is complete (atomic)
//   byte  8 u32 magic 'KVBK'   12 u32 version (1)
//   byte 16 i64 sequence id    24 i32 layer     28 i32 block index
//   byte 32 u64 length         40 u64 generation
//   byte 48 u64 checksum (XXH3-64 of the payload, seeded with the ids and generation)
//   byte 56 u64 reserved       64 payload (length bytes), slot padded to 64
//
// Memory ordering: the writer stores payload and header with plain stores, then `ready` with a
// release store (a transport applies kStoreFlag after the data requests before it, on one
// thread). A reader acquire-loads `ready`; equal to the generation it expects means every store
// before the release is visible, so it copies the payload, checks the header and the checksum
// of its copy, and re-reads `ready` (best effort: a slot reused under it is rejected).
// A slot is handed back to the writer only after its reader is done (the caller's protocol), so
// writer and readers never touch a payload at the same time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/status.h"

namespace recur::transfer {

inline constexpr size_t kKvBlockHeaderBytes = 64;
inline constexpr uint32_t kKvBlockMagic = 0x4B42564B;  // "KVBK"
inline constexpr uint32_t kKvBlockVersion = 1;

struct KvBlockId {
  int64_t seq = 0;
  int32_t layer = 0;
  int32_t block = 0;
};

// Header bytes 8..63, what a writer sends before publishing `ready`.
struct KvBlockFields {
  uint32_t magic = kKvBlockMagic;
  uint32_t version = kKvBlockVersion;
  int64_t seq = 0;
  int32_t layer = 0;
  int32_t block = 0;
  uint64_t length = 0;
  uint64_t generation = 0;
  uint64_t checksum = 0;
  uint64_t reserved = 0;
};
static_assert(sizeof(KvBlockFields) == kKvBlockHeaderBytes - 8);

// Slot bytes for a payload of `payload_bytes` (header plus payload padded to 64).
size_t kv_block_slot_bytes(size_t payload_bytes);
// A trace flow id for the block: bit 63 set, then seq (25 bits), layer (14), block (24).
uint64_t kv_block_flow_id(const KvBlockId& id);

KvBlockFields make_kv_block_fields(const KvBlockId& id, uint64_t generation, std::span<const std::byte> payload);
// The seed of the block's checksum (distinct ids or generations give distinct seeds, so a stale
// block never verifies): checksum = checksum64(payload, kv_block_checksum_seed(id, generation)).
uint64_t kv_block_checksum_seed(const KvBlockId& id, uint64_t generation);

// Writes header and payload into a local slot, then publishes it (release store of `ready`).
// `generation` must be > 0.
void write_kv_block(std::byte* slot, const KvBlockId& id, uint64_t generation, std::span<const std::byte> payload);
// The slot's ready word (acquire load): 0 or the generation published last.
uint64_t kv_block_ready(const std::byte* slot);

// Reads a block of `generation` into `out` (which must be exactly the block's length):
// false if it is not published yet (nothing is read), true once copied and verified, an error
// (kParse) if it is published but wrong: other ids, a length that does not match `out` or does
// not fit the slot (truncated), a checksum mismatch, or overwritten while being read.
Result<bool> try_read_kv_block(const std::byte* slot, size_t slot_bytes, const KvBlockId& id, uint64_t generation,
                               std::span<std::byte> out);

}  // namespace recur::transfer
