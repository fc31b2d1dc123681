// MappedFile: a whole file's bytes in memory, read-only (model weights, traces).
//
// Two ways to hold them (FileMemory): a private read-only memory map of the file (4 KiB
// page-cache pages, faulted in on first touch), or a copy read with pread into anonymous memory
// aligned to 2 MiB and madvised for transparent huge pages, laid out so byte i of the file sits
// at data() + i with data() page-aligned (a 2 MiB page then covers 512 times what a 4 KiB one
// does, so streaming the weights takes a DTLB miss every 2 MiB instead of every 4 KiB).
//
// The bytes live as long as the object; views into them (TensorView, string_view) must not
// outlive it. Move-only. Opening names the file in every error.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "core/status.h"

namespace recur {

enum class FileMemory {
  kMap,        // mmap of the file
  kAnonymous,  // pread into huge-page anonymous memory; kMap when the file does not fit (below)
};

class MappedFile {
 public:
  // Maps `path` read-only. An empty file maps to an empty span.
  static Result<MappedFile> open(const std::string& path);
  // As `memory` says. kAnonymous falls back to kMap when the file is larger than half the memory
  // the kernel reports available (MemAvailable), so a model that does not fit in RAM still runs
  // from the page cache; anonymous() tells which was used. A file that ends before its size
  // said while being read is an error naming the file and the byte.
  static Result<MappedFile> open(const std::string& path, FileMemory memory);

  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  // Whether the bytes are an anonymous copy (FileMemory::kAnonymous took effect).
  bool anonymous() const { return fd_ >= 0; }

  // Whether [p, p + n) lies inside this mapping.
  bool contains(const void* p, size_t n) const;
  // Drops this process's resident pages of the page-aligned interior of [p, p + n), so a later
  // read sees the same bytes again from the file: on a file map by madvise(MADV_DONTNEED) (the
  // pages refault from the file); on an anonymous copy by mapping the file's own pages over
  // the range (MAP_FIXED, private, read-only; plain DONTNEED there would read back zeros).
  // Returns the bytes released; refuses a range outside this object's memory.
  Result<size_t> release_pages(const void* p, size_t n) const;

 private:
  static Result<MappedFile> open_anonymous(const std::string& path, int fd, size_t size);
  void release();
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  size_t reserved_ = 0;  // bytes to munmap: size_ rounded up to pages (anonymous: to 2 MiB)
  int fd_ = -1;          // anonymous copies keep the file open for release_pages
  std::string path_;
};

}  // namespace recur
