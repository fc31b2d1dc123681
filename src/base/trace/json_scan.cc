#include "trace/json_scan.h"

#include <immintrin.h>

#include <bit>
#include <cstring>

#include "core/cpu_features.h"

namespace recur::trace {
namespace {

struct Masks {
  uint64_t quote, backslash, open, close;
};

// '[' (0x5b) and '{' (0x7b) differ only in bit 0x20, as do ']' and '}': one compare each
// after OR-ing 0x20 in.
struct Sse2 {
  static uint64_t eq(const __m128i v[4], __m128i k) {
    uint64_t m0 = uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v[0], k)));
    uint64_t m1 = uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v[1], k)));
    uint64_t m2 = uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v[2], k)));
    uint64_t m3 = uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v[3], k)));
    return m0 | (m1 << 16) | (m2 << 32) | (m3 << 48);
  }
  static Masks classify(const uint8_t* p) {
    __m128i v[4], f[4];
    __m128i bit5 = _mm_set1_epi8(0x20);
    for (int i = 0; i < 4; ++i) {
      v[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
      f[i] = _mm_or_si128(v[i], bit5);
    }
    return Masks{eq(v, _mm_set1_epi8('"')), eq(v, _mm_set1_epi8('\\')), eq(f, _mm_set1_epi8('{')),
                 eq(f, _mm_set1_epi8('}'))};
  }
  static uint64_t prefix_xor(uint64_t x) {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    return x;
  }
  static int popcount(uint64_t x) { return std::popcount(x); }
};

// The same with 32-byte compares, a carry-less multiply for the prefix XOR and POPCNT; only
// called where the CPU has them (scan() checks).
#define RECUR_SCAN_TARGET __attribute__((target("avx2,pclmul,popcnt,bmi")))
struct Avx2 {
  RECUR_SCAN_TARGET static uint64_t eq(__m256i lo, __m256i hi, char c) {
    __m256i k = _mm256_set1_epi8(c);
    uint64_t a = uint32_t(_mm256_movemask_epi8(_mm256_cmpeq_epi8(lo, k)));
    uint64_t b = uint32_t(_mm256_movemask_epi8(_mm256_cmpeq_epi8(hi, k)));
    return a | (b << 32);
  }
  RECUR_SCAN_TARGET static Masks classify(const uint8_t* p) {
    __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
    __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32));
    __m256i bit5 = _mm256_set1_epi8(0x20);
    __m256i flo = _mm256_or_si256(lo, bit5), fhi = _mm256_or_si256(hi, bit5);
    return Masks{eq(lo, hi, '"'), eq(lo, hi, '\\'), eq(flo, fhi, '{'), eq(flo, fhi, '}')};
  }
  RECUR_SCAN_TARGET static uint64_t prefix_xor(uint64_t x) {
    __m128i r = _mm_clmulepi64_si128(_mm_set_epi64x(0, int64_t(x)), _mm_set1_epi8(-1), 0);
    return uint64_t(_mm_cvtsi128_si64(r));
  }
  RECUR_SCAN_TARGET static int popcount(uint64_t x) { return __builtin_popcountll(x); }
};

// Bits of characters escaped by a backslash (simdjson's branchless escape scanner).
inline uint64_t find_escaped(uint64_t backslash, uint64_t& prev_escaped) {
  if ((backslash | prev_escaped) == 0) return 0;  // the common block: no backslash at all
  backslash &= ~prev_escaped;
  uint64_t follows_escape = backslash << 1 | prev_escaped;
  const uint64_t even_bits = 0x5555555555555555ULL;
  uint64_t odd_sequence_starts = backslash & ~even_bits & ~follows_escape;
  uint64_t sequences_starting_on_even_bits;
  prev_escaped = __builtin_add_overflow(odd_sequence_starts, backslash,
                                        &sequences_starting_on_even_bits);
  uint64_t invert_mask = sequences_starting_on_even_bits << 1;
  return (even_bits ^ invert_mask) & follows_escape;
}

template <typename Simd>
__attribute__((always_inline)) inline JsonScanner::Scan scan_blocks(const uint8_t* data, size_t size,
                                                                    size_t start, size_t min_end) {
  using Scan = JsonScanner::Scan;
  using Stop = JsonScanner::Stop;
  uint64_t prev_escaped = 0, prev_in_string = 0;
  int64_t depth = 0;
  size_t last_end = 0;
  for (size_t base = start; base < size; base += 64) {
    Masks m = Simd::classify(data + base);
    uint64_t escaped = find_escaped(m.backslash, prev_escaped);
    uint64_t quote = m.quote & ~escaped;
    uint64_t in_string = Simd::prefix_xor(quote) ^ prev_in_string;
    prev_in_string = uint64_t(int64_t(in_string) >> 63);
    uint64_t valid = size - base >= 64 ? ~uint64_t(0) : (uint64_t(1) << (size - base)) - 1;
    uint64_t open = m.open & ~in_string & valid;
    uint64_t close = m.close & ~in_string & valid;
    if ((open | close) == 0) continue;
    int n_close = Simd::popcount(close);
    // Fast path: depth cannot reach 0 in this block.
    if (depth - n_close > 0) {
      depth += Simd::popcount(open) - n_close;
      continue;
    }
    uint64_t all = open | close;
    while (all != 0) {
      int bit = std::countr_zero(all);
      uint64_t b = uint64_t(1) << bit;
      all &= all - 1;
      size_t pos = base + size_t(bit);
      if (open & b) {
        ++depth;
        continue;
      }
      --depth;
      if (depth < 0) return Scan{Stop::kContainerEnd, pos, last_end, false};
      if (depth == 0) {
        last_end = pos + 1;
        if (pos + 1 >= min_end) return Scan{Stop::kElementEnd, pos + 1, last_end, false};
      }
    }
  }
  return Scan{Stop::kEof, size, last_end, prev_in_string != 0};
}

RECUR_SCAN_TARGET JsonScanner::Scan scan_avx2(const uint8_t* data, size_t size, size_t start,
                                              size_t min_end) {
  return scan_blocks<Avx2>(data, size, start, min_end);
}

}  // namespace

JsonScanner::Scan JsonScanner::scan(size_t start, size_t min_end) const {
  static const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("pclmul") &&
                           __builtin_cpu_supports("popcnt") && __builtin_cpu_supports("bmi");
  if (avx2 && active_isa() >= Isa::kAvx2) return scan_avx2(data_, size_, start, min_end);
  return scan_blocks<Sse2>(data_, size_, start, min_end);
}

size_t JsonScanner::string_end(size_t pos) const {
  size_t i = pos + 1;
  while (i < size_) {
    const void* q = std::memchr(data_ + i, '"', size_ - i);
    if (q == nullptr) return size_ + 1;
    size_t qi = size_t(static_cast<const uint8_t*>(q) - data_);
    size_t bs = 0;
    while (qi - bs > pos + 1 && data_[qi - bs - 1] == '\\') ++bs;
    if (bs % 2 == 0) return qi + 1;
    i = qi + 1;
  }
  return size_ + 1;
}

size_t JsonScanner::value_end(size_t pos) const {
  if (pos >= size_) return size_ + 1;
  uint8_t c = data_[pos];
  if (c == '"') return string_end(pos);
  if (c == '{' || c == '[') {
    Scan s = scan(pos, pos + 1);
    return s.stop == Stop::kElementEnd ? s.pos : size_ + 1;
  }
  size_t i = pos;
  while (i < size_) {
    uint8_t d = data_[i];
    if (d == ',' || d == '}' || d == ']' || d == ' ' || d == '\n' || d == '\r' || d == '\t') break;
    ++i;
  }
  return i;
}

}  // namespace recur::trace
