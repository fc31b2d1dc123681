// AVX-512 loops (F, VNNI, BF16). Compiled with the AVX-512 flags; only called when the CPU
// has the extension each loop needs.
#include <immintrin.h>

#include <cstring>

#include "probe/roofline_kernels.h"

namespace recur::roofline {
namespace {

// Horizontal sums through memory: GCC 12's _mm512_reduce_* trip -Wuninitialized in its own header.
template <typename T, typename V>
T lane_sum(V v) {
  alignas(64) T lanes[64 / sizeof(T)];
  std::memcpy(lanes, &v, 64);
  T s = 0;
  for (T x : lanes) s += x;
  return s;
}

}  // namespace

namespace {

// The loop of read_avx512 and read_prefetch_avx512: Prefetch asks for the four lines
// kPrefetchAhead bytes ahead of each 256-byte step.
template <bool Prefetch>
uint64_t sum_read_avx512(const std::byte* data, size_t bytes) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  for (size_t i = 0; i < bytes; i += 256) {
    if constexpr (Prefetch) {
      const char* ahead = reinterpret_cast<const char*>(data + i + kPrefetchAhead);
      for (int line = 0; line < 4; ++line) _mm_prefetch(ahead + 64 * line, _MM_HINT_T0);
    }
    a = _mm512_add_epi64(a, _mm512_load_si512(data + i));
    b = _mm512_add_epi64(b, _mm512_load_si512(data + i + 64));
    c = _mm512_add_epi64(c, _mm512_load_si512(data + i + 128));
    d = _mm512_add_epi64(d, _mm512_load_si512(data + i + 192));
  }
  __m512i s = _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d));
  return lane_sum<uint64_t>(s);
}

}  // namespace

uint64_t read_avx512(const std::byte* data, size_t bytes) { return sum_read_avx512<false>(data, bytes); }
uint64_t read_prefetch_avx512(const std::byte* data, size_t bytes) { return sum_read_avx512<true>(data, bytes); }

namespace {

double fma_avx512(int64_t iters) {
  __m512 acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = _mm512_set1_ps(1.0f + 0.01f * float(j));
  const __m512 m = _mm512_set1_ps(0.999999f), k = _mm512_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_fmadd_ps(acc[j], m, k);
  }
  __m512 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, acc[j]);
  return double(lane_sum<float>(s));
}

double int8_avx512_vnni(int64_t iters) {
  __m512i acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = _mm512_set1_epi32(j);
  const __m512i ua = _mm512_set1_epi8(3), sb = _mm512_set1_epi8(-2);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_dpbusd_epi32(acc[j], ua, sb);
  }
  __m512i s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_epi32(s, acc[j]);
  return double(lane_sum<int32_t>(s));
}

double bf16_avx512(int64_t iters) {
  __m512 acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = _mm512_set1_ps(float(j));
  const __m512bh a = (__m512bh)_mm512_set1_epi16(0x3f80);  // bf16 1.0
  const __m512bh b = (__m512bh)_mm512_set1_epi16(0x3380);  // bf16 ~6e-8
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm512_dpbf16_ps(acc[j], a, b);
  }
  __m512 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm512_add_ps(s, acc[j]);
  return double(lane_sum<float>(s));
}

}  // namespace

const ComputeLoop kFmaAvx512{fma_avx512, 12 * 16 * 2, "vfmadd231ps zmm"};
// vpdpbusd: 64 u8*s8 multiply-adds per instruction.
const ComputeLoop kInt8Avx512Vnni{int8_avx512_vnni, 12 * 64 * 2, "vpdpbusd zmm"};
// vdpbf16ps: 32 bf16 pairs multiplied and added into 16 fp32 lanes per instruction.
const ComputeLoop kBf16Avx512{bf16_avx512, 12 * 32 * 2, "vdpbf16ps zmm"};

}  // namespace recur::roofline
