// The shared-memory transport. Each engine publishes a directory, the POSIX shared-memory object
// "/recur-kv.<segment>", that lists its regions backed by allocate_shared memory; each such
// allocation is its own object "/recur-kv.<segment>.<pid>.<n>". A peer on the same host maps the
// directory, then maps an allocation the first time a request targets one of its regions, and
// copies with memcpy (ready flags with a release store).
//
// The directory is read with a sequence counter (seqlock over atomics): the owner bumps it to odd,
// updates slots, bumps it to even; a reader retries when it changed underneath. Its state word and
// owner pid tell a peer that the owner closed or died ("peer gone").
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "transfer/memory_registry.h"

namespace recur::transfer {

struct ShmDirectory;

// The owner's side: shared allocations and the directory that lists registered shared regions.
// Unlinks the /dev/shm objects of recur engines whose owning process is gone: allocations
// (recur-kv.<segment>.<pid>.<n>) of a dead pid and directories (recur-kv.<segment>) whose owner
// is dead. ShmOwner::create runs it once per process; objects of live processes and anything not
// named recur-kv.* are never touched.
void sweep_dead_shm_objects();

class ShmOwner {
 public:
  // Fails if a live process owns a directory of that name; a dead owner's is replaced.
  static Result<std::unique_ptr<ShmOwner>> create(const std::string& segment_name);
  ~ShmOwner();  // marks the directory closed, unmaps and unlinks everything
  ShmOwner(const ShmOwner&) = delete;
  ShmOwner& operator=(const ShmOwner&) = delete;

  Result<std::byte*> allocate(size_t bytes);
  Status free(void* addr);
  // The allocation that holds [addr, addr + bytes) entirely, if any.
  std::optional<SharedBacking> find_backing(const void* addr, size_t bytes) const;

  Status publish(const LocalRegion& region);
  void withdraw(uint32_t region_id);

 private:
  struct Allocation {
    uint64_t index = 0;
    std::byte* addr = nullptr;
    size_t bytes = 0;
    std::string name;
  };
  ShmOwner(std::string segment_name, ShmDirectory* dir, std::string dir_name);

  std::string segment_name_;
  ShmDirectory* dir_;
  std::string dir_name_;
  mutable std::mutex mu_;
  std::map<uintptr_t, Allocation> allocations_;
  uint64_t next_alloc_ = 0;
};

// A peer's segment on this host, as the transfer thread sees it. Not thread-safe: one user.
class ShmPeer {
 public:
  static Result<std::unique_ptr<ShmPeer>> open(const std::string& segment_name);
  ~ShmPeer();
  ShmPeer(const ShmPeer&) = delete;
  ShmPeer& operator=(const ShmPeer&) = delete;

  // kFailedPrecondition "peer gone" when the owner closed its engine or its process died.
  Status check_alive() const;
  // The mapped address of [offset, offset + length) of the peer's region.
  Result<std::byte*> resolve(uint32_t region, uint64_t offset, uint64_t length);
  std::vector<RegionInfo> regions();

 private:
  struct Slot {
    uint32_t region = 0;
    SharedBacking backing;
    uint64_t length = 0;
  };
  struct Mapping {
    std::byte* addr = nullptr;
    size_t bytes = 0;
  };
  ShmPeer(std::string segment_name, ShmDirectory* dir, uint64_t instance, int owner_pid);
  void refresh();

  std::string segment_name_;
  ShmDirectory* dir_;
  uint64_t instance_;
  int owner_pid_;
  uint64_t seen_version_ = 1;  // odd: never a stable version, so the first resolve reads the table
  std::vector<Slot> slots_;
  std::map<uint64_t, Mapping> mappings_;  // by allocation index
};

}  // namespace recur::transfer
