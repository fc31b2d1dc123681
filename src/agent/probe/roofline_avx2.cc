// AVX2 + FMA loops. Compiled with -mavx2 -mfma; only called when the CPU has them.
#include <immintrin.h>

#include "probe/roofline_kernels.h"

namespace recur::roofline {

namespace {

// The loop of read_avx2 and read_prefetch_avx2 (see roofline_kernels.h).
template <bool Prefetch>
uint64_t sum_read_avx2(const std::byte* data, size_t bytes) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (size_t i = 0; i < bytes; i += 128) {
    if constexpr (Prefetch) {
      const char* ahead = reinterpret_cast<const char*>(data + i + kPrefetchAhead);
      _mm_prefetch(ahead, _MM_HINT_T0);
      _mm_prefetch(ahead + 64, _MM_HINT_T0);
    }
    a = _mm256_add_epi64(a, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i)));
    b = _mm256_add_epi64(b, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i + 32)));
    c = _mm256_add_epi64(c, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i + 64)));
    d = _mm256_add_epi64(d, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i + 96)));
  }
  __m256i s = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
  alignas(32) uint64_t out[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(out), s);
  return out[0] + out[1] + out[2] + out[3];
}

}  // namespace

uint64_t read_avx2(const std::byte* data, size_t bytes) { return sum_read_avx2<false>(data, bytes); }
uint64_t read_prefetch_avx2(const std::byte* data, size_t bytes) { return sum_read_avx2<true>(data, bytes); }

namespace {

double fma_avx2(int64_t iters) {
  __m256 acc[12];
  for (int j = 0; j < 12; ++j) acc[j] = _mm256_set1_ps(1.0f + 0.01f * float(j));
  const __m256 m = _mm256_set1_ps(0.999999f), k = _mm256_set1_ps(1e-7f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int j = 0; j < 12; ++j) acc[j] = _mm256_fmadd_ps(acc[j], m, k);
  }
  __m256 s = acc[0];
  for (int j = 1; j < 12; ++j) s = _mm256_add_ps(s, acc[j]);
  alignas(32) float out[8];
  _mm256_store_ps(out, s);
  return double(out[0]) + out[7];
}

// No AVX-VNNI assumed: vpmaddubsw (u8*s8 pairs -> i16) + vpmaddwd (-> i32) + vpaddd,
// 32 multiply-adds per three instructions, the classic AVX2 int8 dot sequence.
double int8_avx2(int64_t iters) {
  __m256i acc[8];
  for (int j = 0; j < 8; ++j) acc[j] = _mm256_set1_epi32(j);
  const __m256i ua = _mm256_set1_epi8(3), sb = _mm256_set1_epi8(-2), ones = _mm256_set1_epi16(1);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j)
      acc[j] = _mm256_add_epi32(acc[j], _mm256_madd_epi16(_mm256_maddubs_epi16(ua, sb), ones));
  }
  __m256i s = acc[0];
  for (int j = 1; j < 8; ++j) s = _mm256_add_epi32(s, acc[j]);
  return double(_mm256_extract_epi32(s, 0));
}

}  // namespace

const ComputeLoop kFmaAvx2{fma_avx2, 12 * 8 * 2, "vfmadd231ps ymm"};
const ComputeLoop kInt8Avx2{int8_avx2, 8 * 32 * 2, "vpmaddubsw+vpmaddwd+vpaddd ymm"};

}  // namespace recur::roofline
