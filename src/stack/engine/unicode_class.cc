#include "engine/unicode_class.h"

#include <algorithm>
#include <iterator>

namespace recur::unicode {
namespace {

struct ClassRange {
  uint32_t first, last;
  CharClass cls;
};

using C = CharClass;
constexpr ClassRange kClassRanges[] = {
#include "engine/unicode_class_table.inc"
};

bool is_white_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

}  // namespace

CharClass char_class(uint32_t cp) {
  if (is_white_space(cp)) return CharClass::kWhitespace;
  // The last range starting at or before cp, if it reaches cp.
  auto it = std::upper_bound(std::begin(kClassRanges), std::end(kClassRanges), cp,
                             [](uint32_t c, const ClassRange& r) { return c < r.first; });
  if (it == std::begin(kClassRanges)) return CharClass::kOther;
  --it;
  return cp <= it->last ? it->cls : CharClass::kOther;
}

}  // namespace recur::unicode
