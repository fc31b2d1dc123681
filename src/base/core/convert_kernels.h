// Internal to core/convert: the per-ISA array kernels behind the span functions of convert.h,
// and the IsaDispatch tables that choose among them. Tests use the tables to check which path
// ran; everyone else calls convert.h.
//
// Kernels take raw pointers and a count (no checks: convert.cc validates the spans). The
// _scalar kernels live in convert.cc, _avx2 in convert_avx2.cc, _avx512 in convert_avx512.cc;
// each must return the bits of the single-value function for every input.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/dispatch.h"

namespace recur::convert_kernels {

using EncodeU16Fn = void (*)(const float* src, uint16_t* dst, size_t n);
using DecodeU16Fn = void (*)(const uint16_t* src, float* dst, size_t n);
using EncodeU8Fn = void (*)(const float* src, uint8_t* dst, size_t n);
using DecodeU8Fn = void (*)(const uint8_t* src, float* dst, size_t n);

void fp32_to_bf16_scalar(const float* src, uint16_t* dst, size_t n);
void fp32_to_bf16_avx2(const float* src, uint16_t* dst, size_t n);
void fp32_to_bf16_avx512(const float* src, uint16_t* dst, size_t n);
void bf16_to_fp32_scalar(const uint16_t* src, float* dst, size_t n);
void bf16_to_fp32_avx2(const uint16_t* src, float* dst, size_t n);
void bf16_to_fp32_avx512(const uint16_t* src, float* dst, size_t n);

void fp32_to_fp16_scalar(const float* src, uint16_t* dst, size_t n);
void fp32_to_fp16_avx2(const float* src, uint16_t* dst, size_t n);
void fp32_to_fp16_avx512(const float* src, uint16_t* dst, size_t n);
void fp16_to_fp32_scalar(const uint16_t* src, float* dst, size_t n);
void fp16_to_fp32_avx2(const uint16_t* src, float* dst, size_t n);
void fp16_to_fp32_avx512(const uint16_t* src, float* dst, size_t n);

void fp32_to_fp8e4m3_scalar(const float* src, uint8_t* dst, size_t n);
void fp32_to_fp8e4m3_avx2(const float* src, uint8_t* dst, size_t n);
void fp32_to_fp8e4m3_avx512(const float* src, uint8_t* dst, size_t n);
void fp8e4m3_to_fp32_scalar(const uint8_t* src, float* dst, size_t n);
void fp8e4m3_to_fp32_avx2(const uint8_t* src, float* dst, size_t n);
void fp8e4m3_to_fp32_avx512(const uint8_t* src, float* dst, size_t n);

// e5m2 encoders come in two flavours: IEEE overflow to inf, and saturating (_sat).
void fp32_to_fp8e5m2_scalar(const float* src, uint8_t* dst, size_t n);
void fp32_to_fp8e5m2_avx2(const float* src, uint8_t* dst, size_t n);
void fp32_to_fp8e5m2_avx512(const float* src, uint8_t* dst, size_t n);
void fp32_to_fp8e5m2_sat_scalar(const float* src, uint8_t* dst, size_t n);
void fp32_to_fp8e5m2_sat_avx2(const float* src, uint8_t* dst, size_t n);
void fp32_to_fp8e5m2_sat_avx512(const float* src, uint8_t* dst, size_t n);
void fp8e5m2_to_fp32_scalar(const uint8_t* src, float* dst, size_t n);
void fp8e5m2_to_fp32_avx2(const uint8_t* src, float* dst, size_t n);
void fp8e5m2_to_fp32_avx512(const uint8_t* src, float* dst, size_t n);

inline constexpr IsaDispatch<EncodeU16Fn> kFp32ToBf16{
    .scalar = fp32_to_bf16_scalar, .avx2 = fp32_to_bf16_avx2, .avx512 = fp32_to_bf16_avx512};
inline constexpr IsaDispatch<DecodeU16Fn> kBf16ToFp32{
    .scalar = bf16_to_fp32_scalar, .avx2 = bf16_to_fp32_avx2, .avx512 = bf16_to_fp32_avx512};
inline constexpr IsaDispatch<EncodeU16Fn> kFp32ToFp16{
    .scalar = fp32_to_fp16_scalar, .avx2 = fp32_to_fp16_avx2, .avx512 = fp32_to_fp16_avx512};
inline constexpr IsaDispatch<DecodeU16Fn> kFp16ToFp32{
    .scalar = fp16_to_fp32_scalar, .avx2 = fp16_to_fp32_avx2, .avx512 = fp16_to_fp32_avx512};
inline constexpr IsaDispatch<EncodeU8Fn> kFp32ToFp8e4m3{.scalar = fp32_to_fp8e4m3_scalar,
                                                        .avx2 = fp32_to_fp8e4m3_avx2,
                                                        .avx512 = fp32_to_fp8e4m3_avx512};
inline constexpr IsaDispatch<DecodeU8Fn> kFp8e4m3ToFp32{.scalar = fp8e4m3_to_fp32_scalar,
                                                        .avx2 = fp8e4m3_to_fp32_avx2,
                                                        .avx512 = fp8e4m3_to_fp32_avx512};
inline constexpr IsaDispatch<EncodeU8Fn> kFp32ToFp8e5m2{.scalar = fp32_to_fp8e5m2_scalar,
                                                        .avx2 = fp32_to_fp8e5m2_avx2,
                                                        .avx512 = fp32_to_fp8e5m2_avx512};
inline constexpr IsaDispatch<EncodeU8Fn> kFp32ToFp8e5m2Sat{
    .scalar = fp32_to_fp8e5m2_sat_scalar,
    .avx2 = fp32_to_fp8e5m2_sat_avx2,
    .avx512 = fp32_to_fp8e5m2_sat_avx512};
inline constexpr IsaDispatch<DecodeU8Fn> kFp8e5m2ToFp32{.scalar = fp8e5m2_to_fp32_scalar,
                                                        .avx2 = fp8e5m2_to_fp32_avx2,
                                                        .avx512 = fp8e5m2_to_fp32_avx512};

}  // namespace recur::convert_kernels
