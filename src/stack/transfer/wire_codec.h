// Fixed-layout little-endian fields in and out of byte buffers, for the UCX transport's small wire
// formats (ucx_wire.h, ucx_am_wire.h). Errors name the format, the byte offset and what was expected.
#pragma once

#include <cstddef>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"

namespace recur::transfer {

// Writes fields at increasing offsets of a buffer sized up front (GCC 12 warns spuriously about
// growing vectors in pieces).
class WireWriter {
 public:
  explicit WireWriter(size_t bytes) : out_(bytes) {}
  template <typename T>
  void put(T v) {
    std::memcpy(out_.data() + at_, &v, sizeof v);
    at_ += sizeof v;
  }
  void bytes(std::span<const std::byte> b) {
    if (!b.empty()) std::memcpy(out_.data() + at_, b.data(), b.size());
    at_ += b.size();
  }
  std::vector<std::byte> take() { return std::move(out_); }

 private:
  std::vector<std::byte> out_;
  size_t at_ = 0;
};

// Reads fields in order; the first short read becomes an error naming the offset.
class WireReader {
 public:
  // `format` names what is read in errors ("ucx connect reply").
  WireReader(std::span<const std::byte> in, const char* format) : in_(in), format_(format) {}
  template <typename T>
  Result<T> get(const char* what) {
    T v;
    RECUR_RETURN_IF_ERROR(need(sizeof v, what));
    std::memcpy(&v, in_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  Result<std::vector<std::byte>> bytes(size_t n, const char* what) {
    RECUR_RETURN_IF_ERROR(need(n, what));
    std::vector<std::byte> out(in_.begin() + ptrdiff_t(at_), in_.begin() + ptrdiff_t(at_ + n));
    at_ += n;
    return out;
  }
  size_t at() const { return at_; }
  size_t left() const { return in_.size() - at_; }

 private:
  Status need(size_t n, const char* what) {
    if (n > left()) return parse_error("{} byte {}: {} needs {} bytes, {} left", format_, at_, what, n, left());
    return ok_status();
  }
  std::span<const std::byte> in_;
  const char* format_;
  size_t at_ = 0;
};

}  // namespace recur::transfer
