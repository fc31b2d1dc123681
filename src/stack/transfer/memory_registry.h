// The regions an engine registered: lookup by address (is a local source registered?) and by
// region id (where does a peer's request land?). Errors name the segment, region, offset and
// length. Thread-safe (one mutex; lookups are short).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "transfer/frame.h"
#include "transfer/transfer_engine.h"

namespace recur::transfer {

// Where a region lies inside allocate_shared memory (shm_segment.h).
struct SharedBacking {
  uint64_t alloc_index = 0;
  uint64_t alloc_offset = 0;  // region start within the allocation
  uint64_t alloc_bytes = 0;   // size of the whole allocation (what a peer maps)
};

struct LocalRegion {
  RegionInfo info;
  std::byte* addr = nullptr;
  std::string location;
  std::optional<SharedBacking> backing;
};

class MemoryRegistry {
 public:
  explicit MemoryRegistry(std::string segment_name) : segment_name_(std::move(segment_name)) {}

  Result<LocalRegion> add(std::byte* addr, uint64_t bytes, std::string_view location,
                          std::optional<SharedBacking> backing);
  Result<LocalRegion> remove(const void* addr);
  std::vector<RegionInfo> list() const;
  std::vector<RegionEntry> table() const;

  // The address of [offset, offset + length) of `region`, as a peer's request names it.
  Result<std::byte*> resolve(uint32_t region, uint64_t offset, uint64_t length) const;
  // OK if [addr, addr + length) lies inside one registered region.
  Status check_local(const void* addr, uint64_t length) const;

 private:
  std::string segment_name_;
  mutable std::mutex mu_;
  std::map<uintptr_t, LocalRegion> by_addr_;  // key: start address
  std::map<uint32_t, uintptr_t> by_id_;
  uint32_t next_id_ = 1;  // 0 is never a region: segment offset 0 is invalid
};

}  // namespace recur::transfer
