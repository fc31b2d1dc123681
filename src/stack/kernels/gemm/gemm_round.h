// Scalar tf32 / bf16 roundings for the packing loops (gemm_pack.cc, gemm.cc), inline so they
// cost nothing per element. Only baseline (non-ISA) translation units include this file, so
// no inline copy compiled with -mavx512* can be chosen by the linker for baseline callers.
// The values equal core's round_to_tf32 / fp32_to_bf16 for every non-NaN input (tested).
#pragma once

#include <cstdint>
#include <span>

namespace recur::gemm {

// x rounded to tf32 (nearest even at mantissa bit 13); inf kept, NaN quieted.
inline float tf32_round(float x) {
  uint32_t u = __builtin_bit_cast(uint32_t, x);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0xfffu + ((u >> 13) & 1u)) & 0xffffe000u;
  else if (u & 0x7fffffu) u |= 0x400000u;
  return __builtin_bit_cast(float, u);
}

// fp32 -> bf16 bits, nearest even; NaN quieted.
inline uint16_t bf16_round(float x) {
  uint32_t u = __builtin_bit_cast(uint32_t, x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
inline float bf16_value(uint16_t h) { return __builtin_bit_cast(float, uint32_t(h) << 16); }

// bf16x6's three-part split: hi = bf16(x), mid = bf16(x - hi), lo = bf16(x - hi - mid); each
// residual is exact in fp32, so hi + mid + lo carries 24 bits (all of an fp32 mantissa).
inline void split_bf16x3_parts(std::span<const float> x, std::span<uint16_t> hi, std::span<uint16_t> mid,
                               std::span<uint16_t> lo) {
  for (size_t i = 0; i < x.size(); ++i) {
    hi[i] = bf16_round(x[i]);
    const float r1 = x[i] - bf16_value(hi[i]);
    mid[i] = bf16_round(r1);
    lo[i] = bf16_round(r1 - bf16_value(mid[i]));
  }
}

}  // namespace recur::gemm
