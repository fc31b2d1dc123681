#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>

namespace recur {
namespace {

constexpr size_t kMappedFileHugePage = size_t(2) << 20;

size_t mapped_file_round_up(size_t x, size_t a) { return (x + a - 1) / a * a; }

// MemAvailable from /proc/meminfo in bytes (free memory plus reclaimable page cache); 0 when
// unknown, which keeps files mapped.
size_t mapped_file_available_memory() {
  std::FILE* f = std::fopen("/proc/meminfo", "re");
  if (f == nullptr) return 0;
  char line[256];
  unsigned long long kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr)
    if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1) break;
  std::fclose(f);
  return size_t(kib) * 1024;
}

// `bytes` of fresh anonymous memory at a 2 MiB boundary (mmap more and trim both ends),
// madvised for transparent huge pages before the first touch; reserved is what to munmap.
Result<std::byte*> map_huge_anonymous(const std::string& path, size_t bytes, size_t& reserved) {
  reserved = mapped_file_round_up(bytes, kMappedFileHugePage);
  void* p = mmap(nullptr, reserved + kMappedFileHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return io_error("{}: cannot allocate {} bytes of anonymous memory for the file: {}", path, reserved,
                    std::strerror(errno));
  const auto start = reinterpret_cast<uintptr_t>(p), aligned = mapped_file_round_up(start, kMappedFileHugePage);
  if (aligned > start) munmap(p, aligned - start);
  if (const size_t tail = kMappedFileHugePage - (aligned - start); tail > 0) munmap(reinterpret_cast<void*>(aligned + reserved), tail);
  madvise(reinterpret_cast<void*>(aligned), reserved, MADV_HUGEPAGE);  // advice: without THP, 4 KiB pages
  return reinterpret_cast<std::byte*>(aligned);
}

}  // namespace

Result<MappedFile> MappedFile::open(const std::string& path) { return open(path, FileMemory::kMap); }

Result<MappedFile> MappedFile::open(const std::string& path, FileMemory memory) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return io_error("{}: cannot open: {}", path, std::strerror(errno));
  struct stat st{};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return io_error("{}: cannot stat: {}", path, std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return io_error("{}: not a regular file", path);
  }
  const size_t size = size_t(st.st_size);
  if (memory == FileMemory::kAnonymous && size > 0 && size <= mapped_file_available_memory() / 2)
    return open_anonymous(path, fd, size);
  MappedFile f;
  f.path_ = path;
  f.size_ = size;
  f.reserved_ = size;
  if (f.size_ > 0) {
    void* p = mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      return io_error("{}: cannot map {} bytes: {}", path, f.size_, std::strerror(e));
    }
    f.data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);
  return f;
}

Result<MappedFile> MappedFile::open_anonymous(const std::string& path, int fd, size_t size) {
  MappedFile f;  // owns fd from here: its destructor closes it and unmaps
  f.path_ = path;
  f.fd_ = fd;
  RECUR_ASSIGN_OR_RETURN(std::byte * data, map_huge_anonymous(path, size, f.reserved_));
  f.data_ = data;
  f.size_ = size;
  // pread, not a map: the page cache's copy is never mapped into this process, so the resident
  // set holds the weights once.
  constexpr size_t kChunk = size_t(64) << 20;
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::pread(fd, data + done, std::min(kChunk, size - done), off_t(done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return io_error("{}: read failed at byte {} of {}: {}", path, done, size, std::strerror(errno));
    if (n == 0)
      return io_error("{}: file ends at byte {} while reading {} bytes (truncated while loading?)", path, done, size);
    done += size_t(n);
  }
  if (mprotect(data, f.reserved_, PROT_READ) != 0)
    return io_error("{}: cannot make the {}-byte copy read-only: {}", path, f.reserved_, std::strerror(errno));
  return f;
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      reserved_(std::exchange(other.reserved_, 0)),
      fd_(std::exchange(other.fd_, -1)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    reserved_ = std::exchange(other.reserved_, 0);
    fd_ = std::exchange(other.fd_, -1);
    path_ = std::move(other.path_);
  }
  return *this;
}

bool MappedFile::contains(const void* p, size_t n) const {
  const auto a = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(data_);
  return data_ != nullptr && a >= base && n <= size_ && a - base <= size_ - n;
}

Result<size_t> MappedFile::release_pages(const void* p, size_t n) const {
  if (!contains(p, n))
    return invalid_argument("{}: release_pages: {} bytes at {} are not inside the {}-byte mapping", path_, n, p,
                            size_);
  const auto page = uintptr_t(sysconf(_SC_PAGESIZE));
  const auto a = reinterpret_cast<uintptr_t>(p), base = reinterpret_cast<uintptr_t>(data_);
  const uintptr_t first = (a + page - 1) / page * page, last = (a + n) / page * page;
  if (last <= first) return size_t(0);
  if (fd_ >= 0) {
    // data_ is page-aligned and holds file byte i at data_ + i, so the file offset of `first`
    // is page-aligned too and the file's pages drop in place of the copy.
    void* q = mmap(reinterpret_cast<void*>(first), last - first, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd_,
                   off_t(first - base));
    if (q == MAP_FAILED)
      return io_error("{}: mapping {} bytes of the file over its copy: {}", path_, last - first, std::strerror(errno));
    return size_t(last - first);
  }
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0)
    return io_error("{}: madvise(DONTNEED) of {} bytes: {}", path_, last - first, std::strerror(errno));
  return size_t(last - first);
}

void MappedFile::release() {
  if (data_ != nullptr) munmap(const_cast<std::byte*>(data_), reserved_);
  if (fd_ >= 0) ::close(fd_);
  data_ = nullptr;
  size_ = 0;
  reserved_ = 0;
  fd_ = -1;
}

}  // namespace recur
