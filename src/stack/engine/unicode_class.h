// Unicode character classes for the BPE pre-tokenizers' regexes (\p{L}, \p{N}, \p{P}, \s), from
// the general-category ranges in unicode_class_table.inc (scripts/gen_unicode_classes.py).
#pragma once

#include <cstdint>

namespace recur::unicode {

enum class CharClass : uint8_t {
  kOther,        // symbols, marks, separators that are not white space, controls, unassigned
  kLetter,       // general category L*
  kNumber,       // N*: Nd digits, and Nl/No such as Ⅻ, ½, ²
  kPunctuation,  // P*
  kWhitespace,   // the White_Space property: \t..\r, space, U+0085, U+00A0, U+1680, U+2000..U+200A,
                 // U+2028, U+2029, U+202F, U+205F, U+3000 (what \s matches in the regexes)
};

CharClass char_class(uint32_t cp);

}  // namespace recur::unicode
