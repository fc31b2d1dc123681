#include "core/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

namespace recur {

Result<MappedFile> MappedFile::open(const std::string& path) {
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
  MappedFile f;
  f.path_ = path;
  f.size_ = size_t(st.st_size);
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

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      path_(std::move(other.path_)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
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
  const auto a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t first = (a + page - 1) / page * page, last = (a + n) / page * page;
  if (last <= first) return size_t(0);
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0)
    return io_error("{}: madvise(DONTNEED) of {} bytes: {}", path_, last - first, std::strerror(errno));
  return size_t(last - first);
}

void MappedFile::release() {
  if (data_ != nullptr) munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

}  // namespace recur
