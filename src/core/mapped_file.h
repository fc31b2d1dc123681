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

 private:
  void release();
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
  std::string path_;
};

}  // namespace recur
