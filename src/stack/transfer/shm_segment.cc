#include "transfer/shm_segment.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace recur::transfer {

inline constexpr int kShmDirectorySlots = 256;
inline constexpr uint64_t kShmDirectoryMagic = 0x5249442d564b5252;  // "RRKV-DIR"
inline constexpr uint32_t kShmStateOpen = 1;
inline constexpr uint32_t kShmStateClosed = 2;

// Every field a peer reads concurrently with the owner is an atomic, so the seqlock is race-free.
struct ShmDirectorySlot {
  std::atomic<uint64_t> region{0};  // 0 = empty
  std::atomic<uint64_t> alloc_index{0};
  std::atomic<uint64_t> alloc_offset{0};
  std::atomic<uint64_t> alloc_bytes{0};
  std::atomic<uint64_t> length{0};
};

struct ShmDirectory {
  uint64_t magic;
  int32_t owner_pid;
  uint32_t reserved;
  std::atomic<uint64_t> instance;
  std::atomic<uint32_t> state;
  std::atomic<uint64_t> version;  // seqlock: odd while the owner updates slots
  ShmDirectorySlot slots[kShmDirectorySlots];
};
static_assert(std::atomic<uint64_t>::is_always_lock_free, "shared-memory atomics must be lock-free");

namespace {

std::string shm_directory_name(const std::string& segment) { return "/recur-kv." + segment; }
std::string shm_allocation_name(const std::string& segment, int pid, uint64_t index) {
  return fmt::format("/recur-kv.{}.{}.{}", segment, pid, index);
}

bool shm_process_alive(int pid) { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }

Result<std::byte*> shm_map_object(const std::string& name, size_t bytes, int flags) {
  int fd = ::shm_open(name.c_str(), flags, 0600);
  if (fd < 0) return io_error("shm_open {}: {}", name, std::strerror(errno));
  if ((flags & O_CREAT) != 0 && ::ftruncate(fd, off_t(bytes)) != 0) {
    int err = errno;
    ::close(fd);
    ::shm_unlink(name.c_str());
    return io_error("ftruncate {} to {} bytes: {}", name, bytes, std::strerror(err));
  }
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return io_error("mmap {} ({} bytes): {}", name, bytes, std::strerror(errno));
  return static_cast<std::byte*>(p);
}

// A dead owner's allocations (Linux shows shared-memory objects in /dev/shm).
void shm_unlink_allocations_of(const std::string& segment, int pid) {
  if (pid <= 0) return;
  std::string prefix = fmt::format("recur-kv.{}.{}.", segment, pid);
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    std::string file = entry.path().filename().string();
    if (file.rfind(prefix, 0) == 0) ::shm_unlink(("/" + file).c_str());
  }
}

}  // namespace

// Engines that never ran their destructor (kill -9, a Python interpreter that exits without
// collecting them) must not fill /dev/shm over time.
void sweep_dead_shm_objects() {
  auto digits = [](std::string_view v) {
    return !v.empty() && v.size() < 10 && v.find_first_not_of("0123456789") == std::string_view::npos;
  };
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/dev/shm", ec)) {
    const std::string file = entry.path().filename().string();
    if (file.rfind("recur-kv.", 0) != 0) continue;
    // A directory (recur-kv.<segment>) holds its owner's pid behind its magic.
    int owner = 0;
    bool directory = false;
    if (const int fd = ::shm_open(("/" + file).c_str(), O_RDONLY, 0); fd >= 0) {
      struct stat st{};
      if (::fstat(fd, &st) == 0 && size_t(st.st_size) >= sizeof(ShmDirectory)) {
        void* p = ::mmap(nullptr, sizeof(ShmDirectory), PROT_READ, MAP_SHARED, fd, 0);
        if (p != MAP_FAILED) {
          const auto* d = static_cast<const ShmDirectory*>(p);
          directory = d->magic == kShmDirectoryMagic;
          if (directory) owner = d->owner_pid;
          ::munmap(p, sizeof(ShmDirectory));
        }
      }
      ::close(fd);
    }
    // An allocation (recur-kv.<segment>.<pid>.<index>) names its owner's pid.
    const size_t last = file.rfind('.'), prev = file.rfind('.', last - 1);
    if (!directory && prev != std::string::npos && prev > 8 && digits(std::string_view(file).substr(prev + 1, last - prev - 1)) &&
        digits(std::string_view(file).substr(last + 1)))
      owner = std::stoi(file.substr(prev + 1, last - prev - 1));
    if (owner > 0 && !shm_process_alive(owner)) ::shm_unlink(("/" + file).c_str());
  }
}

namespace {

size_t shm_round_to_pages(size_t bytes) {
  size_t page = size_t(::sysconf(_SC_PAGESIZE));
  return (bytes + page - 1) / page * page;
}

}  // namespace

// ---- owner ----

ShmOwner::ShmOwner(std::string segment_name, ShmDirectory* dir, std::string dir_name)
    : segment_name_(std::move(segment_name)), dir_(dir), dir_name_(std::move(dir_name)) {}

Result<std::unique_ptr<ShmOwner>> ShmOwner::create(const std::string& segment_name) {
  static std::once_flag swept;
  std::call_once(swept, sweep_dead_shm_objects);
  std::string name = shm_directory_name(segment_name);
  if (int fd = ::shm_open(name.c_str(), O_RDONLY, 0); fd >= 0) {
    // An existing directory: refuse a live owner's, replace a dead one's.
    struct stat st{};
    int owner = 0;
    uint32_t state = 0;
    if (::fstat(fd, &st) == 0 && size_t(st.st_size) >= sizeof(ShmDirectory)) {
      void* p = ::mmap(nullptr, sizeof(ShmDirectory), PROT_READ, MAP_SHARED, fd, 0);
      if (p != MAP_FAILED) {
        auto* d = static_cast<ShmDirectory*>(p);
        owner = d->owner_pid;
        state = d->state.load(std::memory_order_acquire);
        ::munmap(p, sizeof(ShmDirectory));
      }
    }
    ::close(fd);
    if (state == kShmStateOpen && shm_process_alive(owner) && owner != ::getpid())
      return make_error(ErrorCode::kFailedPrecondition, "segment {}: already served by process {} on this host",
                        segment_name, owner);
    if (state == kShmStateOpen && owner == ::getpid())
      return make_error(ErrorCode::kFailedPrecondition, "segment {}: already served by another engine of this process",
                        segment_name);
    ::shm_unlink(name.c_str());
    shm_unlink_allocations_of(segment_name, owner);
  }
  RECUR_ASSIGN_OR_RETURN(std::byte * mem,
                         shm_map_object(name, sizeof(ShmDirectory), O_RDWR | O_CREAT | O_EXCL));
  auto* dir = new (mem) ShmDirectory();
  dir->magic = kShmDirectoryMagic;
  dir->owner_pid = ::getpid();
  uint64_t now = uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
  dir->instance.store(now ^ (uint64_t(::getpid()) << 48), std::memory_order_relaxed);
  dir->version.store(0, std::memory_order_relaxed);
  dir->state.store(kShmStateOpen, std::memory_order_release);
  return std::unique_ptr<ShmOwner>(new ShmOwner(segment_name, dir, name));
}

ShmOwner::~ShmOwner() {
  dir_->state.store(kShmStateClosed, std::memory_order_release);
  ::munmap(dir_, sizeof(ShmDirectory));
  ::shm_unlink(dir_name_.c_str());
  for (auto& [addr, a] : allocations_) {
    ::munmap(a.addr, a.bytes);
    ::shm_unlink(a.name.c_str());
  }
}

Result<std::byte*> ShmOwner::allocate(size_t bytes) {
  if (bytes == 0) return invalid_argument("segment {}: allocate_shared(0), expected bytes > 0", segment_name_);
  std::lock_guard lock(mu_);
  Allocation a;
  a.index = next_alloc_++;
  a.bytes = shm_round_to_pages(bytes);
  a.name = shm_allocation_name(segment_name_, ::getpid(), a.index);
  ::shm_unlink(a.name.c_str());  // a dead process of the same pid may have left one
  RECUR_ASSIGN_OR_RETURN(a.addr, shm_map_object(a.name, a.bytes, O_RDWR | O_CREAT | O_EXCL));
  allocations_[reinterpret_cast<uintptr_t>(a.addr)] = a;
  return a.addr;
}

Status ShmOwner::free(void* addr) {
  std::lock_guard lock(mu_);
  auto it = allocations_.find(reinterpret_cast<uintptr_t>(addr));
  if (it == allocations_.end())
    return not_found("segment {}: free_shared({}): not an allocate_shared address", segment_name_, addr);
  ::munmap(it->second.addr, it->second.bytes);
  ::shm_unlink(it->second.name.c_str());
  allocations_.erase(it);
  return ok_status();
}

std::optional<SharedBacking> ShmOwner::find_backing(const void* addr, size_t bytes) const {
  std::lock_guard lock(mu_);
  uintptr_t p = reinterpret_cast<uintptr_t>(addr);
  auto it = allocations_.upper_bound(p);
  if (it == allocations_.begin()) return std::nullopt;
  --it;
  const Allocation& a = it->second;
  if (p - it->first > a.bytes || bytes > a.bytes - (p - it->first)) return std::nullopt;
  return SharedBacking{a.index, p - it->first, a.bytes};
}

Status ShmOwner::publish(const LocalRegion& region) {
  if (!region.backing) return ok_status();
  std::lock_guard lock(mu_);
  for (ShmDirectorySlot& s : dir_->slots) {
    if (s.region.load(std::memory_order_relaxed) != 0) continue;
    dir_->version.fetch_add(1, std::memory_order_acq_rel);
    s.alloc_index.store(region.backing->alloc_index, std::memory_order_release);
    s.alloc_offset.store(region.backing->alloc_offset, std::memory_order_release);
    s.alloc_bytes.store(region.backing->alloc_bytes, std::memory_order_release);
    s.length.store(region.info.length, std::memory_order_release);
    s.region.store(region.info.id, std::memory_order_release);
    dir_->version.fetch_add(1, std::memory_order_release);
    return ok_status();
  }
  return make_error(ErrorCode::kFailedPrecondition, "segment {}: more than {} shared regions registered",
                    segment_name_, kShmDirectorySlots);
}

void ShmOwner::withdraw(uint32_t region_id) {
  std::lock_guard lock(mu_);
  for (ShmDirectorySlot& s : dir_->slots) {
    if (s.region.load(std::memory_order_relaxed) != region_id) continue;
    dir_->version.fetch_add(1, std::memory_order_acq_rel);
    s.region.store(0, std::memory_order_release);
    dir_->version.fetch_add(1, std::memory_order_release);
  }
}

// ---- peer ----

ShmPeer::ShmPeer(std::string segment_name, ShmDirectory* dir, uint64_t instance, int owner_pid)
    : segment_name_(std::move(segment_name)), dir_(dir), instance_(instance), owner_pid_(owner_pid) {}

Result<std::unique_ptr<ShmPeer>> ShmPeer::open(const std::string& segment_name) {
  std::string name = shm_directory_name(segment_name);
  int fd = ::shm_open(name.c_str(), O_RDONLY, 0);
  if (fd < 0)
    return not_found("segment {}: no engine of that name on this host (shm {}: {})", segment_name, name,
                     std::strerror(errno));
  struct stat st{};
  if (::fstat(fd, &st) != 0 || size_t(st.st_size) < sizeof(ShmDirectory)) {
    ::close(fd);
    return make_error(ErrorCode::kFailedPrecondition, "segment {}: directory {} is not initialized", segment_name, name);
  }
  void* p = ::mmap(nullptr, sizeof(ShmDirectory), PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return io_error("segment {}: mmap {}: {}", segment_name, name, std::strerror(errno));
  auto* dir = static_cast<ShmDirectory*>(p);
  if (dir->magic != kShmDirectoryMagic) {
    ::munmap(p, sizeof(ShmDirectory));
    return make_error(ErrorCode::kFailedPrecondition, "segment {}: {} is not a recur segment directory", segment_name,
                      name);
  }
  auto peer = std::unique_ptr<ShmPeer>(
      new ShmPeer(segment_name, dir, dir->instance.load(std::memory_order_acquire), dir->owner_pid));
  RECUR_RETURN_IF_ERROR(peer->check_alive());
  return peer;
}

ShmPeer::~ShmPeer() {
  for (auto& [index, m] : mappings_) ::munmap(m.addr, m.bytes);
  ::munmap(dir_, sizeof(ShmDirectory));
}

Status ShmPeer::check_alive() const {
  if (dir_->state.load(std::memory_order_acquire) != kShmStateOpen ||
      dir_->instance.load(std::memory_order_relaxed) != instance_)
    return make_error(ErrorCode::kFailedPrecondition, "peer gone: segment {} was closed by its engine", segment_name_);
  if (!shm_process_alive(owner_pid_))
    return make_error(ErrorCode::kFailedPrecondition, "peer gone: segment {}: its process {} exited", segment_name_,
                      owner_pid_);
  return ok_status();
}

void ShmPeer::refresh() {
  // Bounded: an owner that died mid-update leaves the version odd; keep the last table then
  // (check_alive reports the death).
  for (int tries = 0; tries < (1 << 16); ++tries) {
    uint64_t v1 = dir_->version.load(std::memory_order_acquire);
    if (v1 == seen_version_) return;
    if (v1 % 2 == 1) {  // the owner is updating
      std::this_thread::yield();
      continue;
    }
    std::vector<Slot> slots;
    for (const ShmDirectorySlot& s : dir_->slots) {
      uint64_t region = s.region.load(std::memory_order_acquire);
      if (region == 0) continue;
      // Acquire loads keep the version re-read below after them (a seqlock without a fence,
      // which ThreadSanitizer does not model).
      Slot out;
      out.region = uint32_t(region);
      out.backing.alloc_index = s.alloc_index.load(std::memory_order_acquire);
      out.backing.alloc_offset = s.alloc_offset.load(std::memory_order_acquire);
      out.backing.alloc_bytes = s.alloc_bytes.load(std::memory_order_acquire);
      out.length = s.length.load(std::memory_order_acquire);
      slots.push_back(out);
    }
    if (dir_->version.load(std::memory_order_relaxed) != v1) continue;
    slots_ = std::move(slots);
    seen_version_ = v1;
    return;
  }
}

Result<std::byte*> ShmPeer::resolve(uint32_t region, uint64_t offset, uint64_t length) {
  refresh();
  for (const Slot& s : slots_) {
    if (s.region != region) continue;
    if (offset > s.length || length > s.length - offset)
      return invalid_argument("segment {}: region {}: offset {} + length {} is past its end ({} bytes)", segment_name_,
                              region, offset, length, s.length);
    auto m = mappings_.find(s.backing.alloc_index);
    if (m == mappings_.end()) {
      RECUR_ASSIGN_OR_RETURN(std::byte * addr,
                             shm_map_object(shm_allocation_name(segment_name_, owner_pid_, s.backing.alloc_index),
                                            s.backing.alloc_bytes, O_RDWR));
      m = mappings_.emplace(s.backing.alloc_index, Mapping{addr, s.backing.alloc_bytes}).first;
    }
    return m->second.addr + s.backing.alloc_offset + offset;
  }
  return not_found("segment {}: region {} (offset {}, length {}) is not a registered shared-memory region", segment_name_,
                   region, offset, length);
}

std::vector<RegionInfo> ShmPeer::regions() {
  refresh();
  std::vector<RegionInfo> out;
  for (const Slot& s : slots_) out.push_back({s.region, segment_offset(s.region, 0), s.length, true});
  return out;
}

}  // namespace recur::transfer
