#include "trace/json_scan.h"

#include <emmintrin.h>

#include <bit>
#include <cstring>

namespace recur::trace {
namespace {

struct Masks {
  uint64_t quote, backslash, open, close;
};

inline uint64_t eq_mask(const __m128i v[4], char c) {
  __m128i k = _mm_set1_epi8(c);
  uint64_t m0 = uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v[0], k)));
  uint64_t m1 = uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v[1], k)));
  uint64_t m2 = uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v[2], k)));
  uint64_t m3 = uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(v[3], k)));
  return m0 | (m1 << 16) | (m2 << 32) | (m3 << 48);
}

inline Masks classify(const uint8_t* p) {
  __m128i v[4];
  for (int i = 0; i < 4; ++i) v[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * i));
  Masks m;
  m.quote = eq_mask(v, '"');
  m.backslash = eq_mask(v, '\\');
  m.open = eq_mask(v, '{') | eq_mask(v, '[');
  m.close = eq_mask(v, '}') | eq_mask(v, ']');
  return m;
}

// Bits of characters escaped by a backslash (simdjson's branchless escape scanner).
inline uint64_t find_escaped(uint64_t backslash, uint64_t& prev_escaped) {
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

inline uint64_t prefix_xor(uint64_t x) {
  x ^= x << 1;
  x ^= x << 2;
  x ^= x << 4;
  x ^= x << 8;
  x ^= x << 16;
  x ^= x << 32;
  return x;
}

}  // namespace

JsonScanner::Scan JsonScanner::scan(size_t start, size_t min_end) const {
  uint64_t prev_escaped = 0, prev_in_string = 0;
  int64_t depth = 0;
  size_t last_end = 0;
  for (size_t base = start; base < size_; base += 64) {
    Masks m = classify(data_ + base);
    uint64_t escaped = find_escaped(m.backslash, prev_escaped);
    uint64_t quote = m.quote & ~escaped;
    uint64_t in_string = prefix_xor(quote) ^ prev_in_string;
    prev_in_string = uint64_t(int64_t(in_string) >> 63);
    uint64_t valid = size_ - base >= 64 ? ~uint64_t(0) : (uint64_t(1) << (size_ - base)) - 1;
    uint64_t open = m.open & ~in_string & valid;
    uint64_t close = m.close & ~in_string & valid;
    if ((open | close) == 0) continue;
    int n_close = std::popcount(close);
    // Fast path: depth cannot reach 0 in this block.
    if (depth - n_close > 0) {
      depth += std::popcount(open) - n_close;
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
  return Scan{Stop::kEof, size_, last_end, prev_in_string != 0};
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
