#include "probe/check_numeric.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace recur::probe {
namespace {

uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40);  // NaN stays NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

float bf16_to_f32(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE binary16, round to nearest even, from a double (exact: one rounding step).
uint16_t double_to_f16(double d) {
  uint16_t sign = std::signbit(d) ? 0x8000 : 0;
  double a = std::fabs(d);
  if (std::isnan(d)) return 0x7e00;
  if (a >= 65520.0) return sign | 0x7c00;  // rounds to infinity
  if (a < std::ldexp(1.0, -14)) {          // subnormal: units of 2^-24
    double q = std::nearbyint(std::ldexp(a, 24));
    return sign | uint16_t(q);
  }
  int e;
  double m = std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
  double q = std::nearbyint(std::ldexp(m, 11));  // 11 significant bits
  if (q >= 2048) {
    q /= 2;
    ++e;
  }
  int biased = e - 1 + 15;
  if (biased >= 31) return sign | 0x7c00;
  return sign | uint16_t(biased << 10) | uint16_t(uint32_t(q) & 0x3ff);
}

double f16_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double sign = (h & 0x8000) ? -1.0 : 1.0;
  if (e == 0) return sign * std::ldexp(double(m), -24);
  if (e == 31) return m ? std::numeric_limits<double>::quiet_NaN() : sign * std::numeric_limits<double>::infinity();
  return sign * std::ldexp(double(m | 0x400), e - 25);
}

template <typename I>
I saturate(double v) {
  if (std::isnan(v)) return 0;
  double r = std::nearbyint(v);
  if (r < double(std::numeric_limits<I>::min())) return std::numeric_limits<I>::min();
  if (r > double(std::numeric_limits<I>::max())) return std::numeric_limits<I>::max();
  return I(r);
}

// Maps a float's bits to an integer line where adjacent floats differ by 1.
int64_t ordered(uint64_t bits, int width) {
  const uint64_t sign = uint64_t(1) << (width - 1);
  const uint64_t mag = bits & (sign - 1);
  return (bits & sign) ? -int64_t(mag) : int64_t(mag);
}

uint64_t bits_of(DType t, double v) {
  switch (t) {
    case DType::kF64: {
      uint64_t u;
      std::memcpy(&u, &v, 8);
      return u;
    }
    case DType::kF32: {
      float f = float(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return u;
    }
    case DType::kBF16: return f32_to_bf16(float(v));
    case DType::kF16: return double_to_f16(v);
    default: return 0;
  }
}

int float_width(DType t) {
  switch (t) {
    case DType::kF64: return 64;
    case DType::kF32: return 32;
    case DType::kBF16: case DType::kF16: return 16;
    default: return 0;
  }
}

}  // namespace

bool check_supports(DType t) {
  switch (t) {
    case DType::kF64: case DType::kF32: case DType::kBF16: case DType::kF16:
    case DType::kI32: case DType::kI8: case DType::kU8: return true;
    default: return false;
  }
}

void store_from_double(DType t, const double* src, void* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    switch (t) {
      case DType::kF64: static_cast<double*>(dst)[i] = src[i]; break;
      case DType::kF32: static_cast<float*>(dst)[i] = float(src[i]); break;
      case DType::kBF16: static_cast<uint16_t*>(dst)[i] = f32_to_bf16(float(src[i])); break;
      case DType::kF16: static_cast<uint16_t*>(dst)[i] = double_to_f16(src[i]); break;
      case DType::kI32: static_cast<int32_t*>(dst)[i] = saturate<int32_t>(src[i]); break;
      case DType::kI8: static_cast<int8_t*>(dst)[i] = saturate<int8_t>(src[i]); break;
      case DType::kU8: static_cast<uint8_t*>(dst)[i] = saturate<uint8_t>(src[i]); break;
      default: break;
    }
  }
}

double load_as_double(DType t, const void* base, size_t i) {
  switch (t) {
    case DType::kF64: return static_cast<const double*>(base)[i];
    case DType::kF32: return static_cast<const float*>(base)[i];
    case DType::kBF16: return bf16_to_f32(static_cast<const uint16_t*>(base)[i]);
    case DType::kF16: return f16_to_double(static_cast<const uint16_t*>(base)[i]);
    case DType::kI32: return static_cast<const int32_t*>(base)[i];
    case DType::kI8: return static_cast<const int8_t*>(base)[i];
    case DType::kU8: return static_cast<const uint8_t*>(base)[i];
    default: return std::numeric_limits<double>::quiet_NaN();
  }
}

double round_to(DType t, double v) {
  alignas(8) unsigned char tmp[8];
  store_from_double(t, &v, tmp, 1);
  return load_as_double(t, tmp, 0);
}

int64_t ulp_distance(DType t, double a, double b) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  int width = float_width(t);
  if (width == 0) {
    double d = std::fabs(round_to(t, a) - round_to(t, b));
    return std::isnan(d) ? kMax : int64_t(d);
  }
  if (std::isnan(a) || std::isnan(b)) return (std::isnan(a) && std::isnan(b)) ? 0 : kMax;
  int64_t oa = ordered(bits_of(t, a), width), ob = ordered(bits_of(t, b), width);
  if ((oa < 0) != (ob < 0) && width == 64) {  // avoid overflow across zero for doubles
    double d = double(oa) - double(ob);
    return std::fabs(d) >= 9.2e18 ? kMax : int64_t(std::fabs(d));
  }
  return oa > ob ? oa - ob : ob - oa;
}

void fill_sentinel(DType t, void* dst, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    switch (t) {
      case DType::kF64: { uint64_t u = 0x7ff8deadbeef5a5aull; std::memcpy(static_cast<char*>(dst) + 8 * i, &u, 8); break; }
      case DType::kF32: case DType::kI32: { uint32_t u = 0x7fc0dea5u; std::memcpy(static_cast<char*>(dst) + 4 * i, &u, 4); break; }
      case DType::kBF16: static_cast<uint16_t*>(dst)[i] = 0x7fa5; break;
      case DType::kF16: static_cast<uint16_t*>(dst)[i] = 0x7ea5; break;
      case DType::kI8: case DType::kU8: static_cast<uint8_t*>(dst)[i] = 0xa5; break;
      default: break;
    }
  }
}

bool is_sentinel(DType t, const void* base, size_t i) {
  alignas(8) unsigned char s[8];
  fill_sentinel(t, s, 1);
  size_t w = dtype_size(t);
  return std::memcmp(static_cast<const char*>(base) + w * i, s, w) == 0;
}

uint64_t checksum_bytes(const void* data, size_t bytes) {
  uint64_t h = 1469598103934665603ull;
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace recur::probe
