// Element types recur's tensors hold, with their sizes and names.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace recur {

enum class DType : uint8_t {
  kF64,
  kF32,
  kF16,
  kBF16,
  kFP8E4M3,  // OCP E4M3 ("FN"): max 448, no infinity, NaN = S.1111.111
  kFP8E5M2,  // OCP E5M2: IEEE-like, has infinity
  kI32,
  kI8,
  kU8,
};

constexpr size_t dtype_size(DType t) {
  switch (t) {
    case DType::kF64: return 8;
    case DType::kF32: case DType::kI32: return 4;
    case DType::kF16: case DType::kBF16: return 2;
    case DType::kFP8E4M3: case DType::kFP8E5M2: case DType::kI8: case DType::kU8: return 1;
  }
  return 0;
}

std::string_view dtype_name(DType t);
// Accepts the names dtype_name() prints ("f32", "bf16", "fp8_e4m3", ...).
std::optional<DType> parse_dtype(std::string_view name);

// The C++ type that stores one element of each dtype (16-bit floats and fp8 are raw bits).
template <typename T> struct DTypeOf;
template <> struct DTypeOf<double> { static constexpr DType value = DType::kF64; };
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kI8; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };

}  // namespace recur
