#include "core/tensor.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace recur {

Result<TensorView> TensorView::make(void* data, DType dtype, std::span<const int64_t> shape,
                                    std::span<const int64_t> strides) {
  if (shape.size() > size_t(kMaxTensorDims))
    return invalid_argument("tensor rank {} exceeds the maximum of {}", shape.size(), kMaxTensorDims);
  if (!strides.empty() && strides.size() != shape.size())
    return invalid_argument("tensor has {} dims but {} strides", shape.size(), strides.size());
  TensorView v;
  v.data_ = data;
  v.dtype_ = dtype;
  v.rank_ = int(shape.size());
  int64_t running = 1;
  for (int i = v.rank_ - 1; i >= 0; --i) {
    if (shape[i] < 0) return invalid_argument("tensor dim {} is negative ({})", i, shape[i]);
    v.shape_[i] = shape[i];
    v.strides_[i] = strides.empty() ? running : strides[i];
    running *= shape[i];
  }
  return v;
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank_; ++i) n *= shape_[i];
  return n;
}

bool TensorView::is_contiguous() const {
  int64_t expected = 1;
  for (int i = rank_ - 1; i >= 0; --i) {
    if (shape_[i] != 1 && strides_[i] != expected) return false;
    expected *= shape_[i];
  }
  return true;
}

size_t TensorView::span_bytes() const {
  if (numel() == 0) return 0;
  int64_t last = 0;
  for (int i = 0; i < rank_; ++i) last += (shape_[i] - 1) * strides_[i];
  return size_t(last + 1) * dtype_size(dtype_);
}

int64_t TensorView::offset(std::initializer_list<int64_t> index) const {
  assert(int(index.size()) == rank_);
  int64_t off = 0;
  int i = 0;
  for (int64_t x : index) {
    assert(x >= 0 && x < shape_[i]);
    off += x * strides_[i++];
  }
  return off;
}

Result<TensorView> TensorView::slice(int dim, int64_t begin, int64_t end) const {
  if (dim < 0 || dim >= rank_) return invalid_argument("slice dim {} out of range for rank {}", dim, rank_);
  if (begin < 0 || end < begin || end > shape_[dim])
    return invalid_argument("slice [{}, {}) out of range for dim {} of size {}", begin, end, dim, shape_[dim]);
  TensorView v = *this;
  v.data_ = static_cast<std::byte*>(data_) + begin * strides_[dim] * int64_t(dtype_size(dtype_));
  v.shape_[dim] = end - begin;
  return v;
}

Result<TensorView> TensorView::transpose(int a, int b) const {
  if (a < 0 || b < 0 || a >= rank_ || b >= rank_)
    return invalid_argument("transpose dims ({}, {}) out of range for rank {}", a, b, rank_);
  TensorView v = *this;
  std::swap(v.shape_[a], v.shape_[b]);
  std::swap(v.strides_[a], v.strides_[b]);
  return v;
}

Result<TensorView> TensorView::reshape(std::span<const int64_t> shape) const {
  if (!is_contiguous()) return invalid_argument("reshape of non-contiguous tensor {}", to_string());
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (n != numel())
    return invalid_argument("reshape {} to [{}]: {} elements, expected {}", to_string(),
                            fmt::join(shape, ","), n, numel());
  return make(data_, dtype_, shape);
}

std::string TensorView::to_string() const {
  return fmt::format("{}[{}]", dtype_name(dtype_), fmt::join(shape(), ","));
}

}  // namespace recur
