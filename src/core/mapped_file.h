// MappedFile: a read-only memory map of a whole file (model weights, traces).
//
// The mapping lives as long as the object; views into it (TensorView, string_view) must not
// outlive it. Move-only. Opening names the file in every error.
#pragma once

#include <cstddef>
#include <span>
#include <string>

#include "core/status.h"

namespace recur {

class MappedFile {
 public:
  // Maps `path` read-only. An empty file maps to an empty span.
  static Result<MappedFile> open(const std::string& path);

  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  std::span<const std::byte> bytes() const { return {data_, size_}; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // Whether [p, p + n) lies inside this mapping.
  bool contains(const void* p, size_t n) const;
  // Drops this process's resident pages of the page-aligned interior of [p, p + n)
  // (madvise MADV_DONTNEED): the mapping is a private read-only file map, so a later read
  // refaults them from the file and sees the same bytes. Returns the bytes released; refuses a
  // range outside the mapping (on anonymous memory DONTNEED would zero the data).
  Result<size_t> release_pages(const void* p, size_t n) const;

 private:
  void release();
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace recur
