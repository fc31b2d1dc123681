#include "transfer/memory_registry.h"

namespace recur::transfer {

Result<LocalRegion> MemoryRegistry::add(std::byte* addr, uint64_t bytes, std::string_view location,
                                        std::optional<SharedBacking> backing) {
  if (addr == nullptr || bytes == 0)
    return invalid_argument("segment {}: register_memory({}, {}): expected a non-null address and a length > 0",
                            segment_name_, static_cast<void*>(addr), bytes);
  if (bytes >= kMaxRegionBytes)
    return invalid_argument("segment {}: register_memory: {} bytes, expected below {} (1 TiB)", segment_name_, bytes,
                            kMaxRegionBytes);
  std::lock_guard lock(mu_);
  uintptr_t begin = reinterpret_cast<uintptr_t>(addr);
  auto next = by_addr_.lower_bound(begin);
  if (next != by_addr_.end() && next->first < begin + bytes)
    return invalid_argument("segment {}: register_memory({}, {}) overlaps region {} at {}", segment_name_,
                            static_cast<void*>(addr), bytes, next->second.info.id, static_cast<void*>(next->second.addr));
  if (next != by_addr_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second.info.length > begin)
      return invalid_argument("segment {}: register_memory({}, {}) overlaps region {} at {}", segment_name_,
                              static_cast<void*>(addr), bytes, prev->second.info.id,
                              static_cast<void*>(prev->second.addr));
  }
  if (next_id_ >= (1u << (64 - kRegionShift)))
    return make_error(ErrorCode::kFailedPrecondition, "segment {}: region ids exhausted", segment_name_);
  LocalRegion r;
  r.info.id = next_id_++;
  r.info.segment_offset = segment_offset(r.info.id, 0);
  r.info.length = bytes;
  r.info.shared = backing.has_value();
  r.addr = addr;
  r.location = std::string(location);
  r.backing = backing;
  by_addr_[begin] = r;
  by_id_[r.info.id] = begin;
  return r;
}

Result<LocalRegion> MemoryRegistry::remove(const void* addr) {
  std::lock_guard lock(mu_);
  auto it = by_addr_.find(reinterpret_cast<uintptr_t>(addr));
  if (it == by_addr_.end())
    return not_found("segment {}: unregister_memory({}): no region starts there", segment_name_, addr);
  LocalRegion r = it->second;
  by_id_.erase(r.info.id);
  by_addr_.erase(it);
  return r;
}

std::vector<RegionInfo> MemoryRegistry::list() const {
  std::lock_guard lock(mu_);
  std::vector<RegionInfo> out;
  for (const auto& [id, begin] : by_id_) out.push_back(by_addr_.at(begin).info);
  return out;
}

std::vector<RegionEntry> MemoryRegistry::table() const {
  std::vector<RegionEntry> out;
  for (const RegionInfo& r : list()) out.push_back({r.id, r.length});
  return out;
}

Result<std::byte*> MemoryRegistry::resolve(uint32_t region, uint64_t offset, uint64_t length) const {
  std::lock_guard lock(mu_);
  auto id = by_id_.find(region);
  if (id == by_id_.end())
    return not_found("segment {}: region {} (offset {}, length {}) is not registered", segment_name_, region, offset,
                     length);
  const LocalRegion& r = by_addr_.at(id->second);
  if (offset > r.info.length || length > r.info.length - offset)
    return invalid_argument("segment {}: region {}: offset {} + length {} is past its end ({} bytes)", segment_name_,
                            region, offset, length, r.info.length);
  return r.addr + offset;
}

Status MemoryRegistry::check_local(const void* addr, uint64_t length) const {
  std::lock_guard lock(mu_);
  uintptr_t p = reinterpret_cast<uintptr_t>(addr);
  auto it = by_addr_.upper_bound(p);
  if (it != by_addr_.begin()) {
    --it;
    const LocalRegion& r = it->second;
    if (p - it->first <= r.info.length && length <= r.info.length - (p - it->first)) return ok_status();
  }
  return invalid_argument("segment {}: local address {} (length {}) is not inside registered memory", segment_name_,
                          addr, length);
}

}  // namespace recur::transfer
