#include "core/dtype.h"

namespace recur {
namespace {
constexpr DType kAll[] = {DType::kF64, DType::kF32, DType::kF16, DType::kBF16, DType::kFP8E4M3,
                          DType::kFP8E5M2, DType::kI32, DType::kI8, DType::kU8};
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::kF64: return "f64";
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kFP8E4M3: return "fp8_e4m3";
    case DType::kFP8E5M2: return "fp8_e5m2";
    case DType::kI32: return "i32";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (DType t : kAll)
    if (dtype_name(t) == name) return t;
  return std::nullopt;
}

}  // namespace recur
