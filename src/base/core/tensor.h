// TensorView: a non-owning view of a strided n-d array with a dtype.
//
// Strides are in elements, not bytes. A view never allocates or frees; whoever owns the
// memory (an AlignedBuffer, an mmap'd model file) must outlive it. Views are cheap to copy.
#pragma once

#include <array>
#include <cassert>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "core/dtype.h"
#include "core/status.h"

namespace recur {

inline constexpr int kMaxTensorDims = 6;

class TensorView {
 public:
  TensorView() = default;

  // Checks rank, non-negative dims and that strides (if given) match the rank.
  // Empty strides mean row-major contiguous.
  static Result<TensorView> make(void* data, DType dtype, std::span<const int64_t> shape,
                                 std::span<const int64_t> strides = {});

  // A contiguous view of typed memory; asserts a valid shape (for literals in code).
  template <typename T>
  static TensorView of(T* data, std::initializer_list<int64_t> shape) {
    auto view = make(const_cast<std::remove_const_t<T>*>(data), DTypeOf<std::remove_const_t<T>>::value,
                     std::span<const int64_t>(shape.begin(), shape.size()));
    assert(view.has_value());
    return *view;
  }

  void* data() const { return data_; }
  DType dtype() const { return dtype_; }
  int rank() const { return rank_; }
  int64_t dim(int i) const { return shape_[i]; }
  int64_t stride(int i) const { return strides_[i]; }
  std::span<const int64_t> shape() const { return {shape_.data(), size_t(rank_)}; }
  std::span<const int64_t> strides() const { return {strides_.data(), size_t(rank_)}; }
  int64_t numel() const;
  bool is_contiguous() const;
  // Bytes spanned from the first to one past the last element.
  size_t span_bytes() const;

  // Element offset of an index tuple; asserts the rank and bounds in debug builds.
  int64_t offset(std::initializer_list<int64_t> index) const;

  template <typename T>
  T* ptr() const {
    assert(DTypeOf<T>::value == dtype_ || sizeof(T) == dtype_size(dtype_));
    return static_cast<T*>(data_);
  }
  template <typename T>
  T& at(std::initializer_list<int64_t> index) const {
    return ptr<T>()[offset(index)];
  }

  // [begin, end) along one dimension.
  Result<TensorView> slice(int dim, int64_t begin, int64_t end) const;
  // Swap two dimensions (no data movement).
  Result<TensorView> transpose(int a, int b) const;
  // A new shape over the same elements; the view must be contiguous.
  Result<TensorView> reshape(std::span<const int64_t> shape) const;

  // "f32[2,3,4]"
  std::string to_string() const;

 private:
  void* data_ = nullptr;
  DType dtype_ = DType::kF32;
  int rank_ = 0;
  std::array<int64_t, kMaxTensorDims> shape_{};
  std::array<int64_t, kMaxTensorDims> strides_{};
};

}  // namespace recur
