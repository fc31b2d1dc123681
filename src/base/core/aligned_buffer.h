// AlignedBuffer: an owning, move-only, 64-byte-aligned block of memory.
//
// 64 bytes is one cache line and one AVX-512 register, so vector loads never split lines.
// Contents are uninitialised unless zeroed is requested.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <span>
#include <utility>

namespace recur {

inline constexpr size_t kCacheLine = 64;

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes, bool zeroed = false, size_t alignment = kCacheLine)
      : size_(bytes) {
    if (bytes == 0) return;
    size_t rounded = (bytes + alignment - 1) / alignment * alignment;
    data_ = static_cast<std::byte*>(std::aligned_alloc(alignment, rounded));
    if (data_ == nullptr) throw std::bad_alloc();
    if (zeroed) std::memset(data_, 0, rounded);
  }
  ~AlignedBuffer() { std::free(data_); }

  AlignedBuffer(AlignedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  AlignedBuffer& operator=(AlignedBuffer&& other) noexcept {
    if (this != &other) {
      std::free(data_);
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  AlignedBuffer(const AlignedBuffer&) = delete;
  AlignedBuffer& operator=(const AlignedBuffer&) = delete;

  std::byte* data() { return data_; }
  const std::byte* data() const { return data_; }
  size_t size() const { return size_; }

  template <typename T>
  std::span<T> as() {
    return {reinterpret_cast<T*>(data_), size_ / sizeof(T)};
  }
  template <typename T>
  std::span<const T> as() const {
    return {reinterpret_cast<const T*>(data_), size_ / sizeof(T)};
  }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

// An aligned buffer of n elements of T.
template <typename T>
AlignedBuffer make_aligned(size_t n, bool zeroed = false) {
  return AlignedBuffer(n * sizeof(T), zeroed);
}

}  // namespace recur
