#include "engine/tokenizer_pre.h"

#include <utility>

#include "engine/unicode_class.h"
#include "engine/utf8.h"

namespace recur {
namespace {

using unicode::CharClass;

// One fragment decoded to code points: chars[i] starts at byte at[i]; at[n] = fragment size.
struct PreChars {
  std::string_view text;
  std::vector<uint32_t> cp;
  std::vector<CharClass> cls;
  std::vector<size_t> at;

  explicit PreChars(std::string_view s) : text(s) {
    for (size_t i = 0; i < s.size();) {
      const size_t n = utf8::char_length(s, i);
      uint32_t c = uint8_t(s[i]);
      if (n > 1) {
        c &= 0x7Fu >> n;
        for (size_t k = 1; k < n; ++k) c = (c << 6) | (uint8_t(s[i + k]) & 0x3Fu);
      } else if (c >= 0x80) {
        c = 0xFFFD;  // a byte that starts no valid sequence reads as U+FFFD (a symbol), as in llama.cpp
      }
      at.push_back(i);
      cp.push_back(c);
      cls.push_back(unicode::char_class(c));
      i += n;
    }
    at.push_back(s.size());
  }
  size_t size() const { return cp.size(); }
  // Out of range reads as no class at all (the fragment's end, as the regexes see it).
  bool is(size_t i, CharClass c) const { return i < size() && cls[i] == c; }
  bool is_space(size_t i) const { return is(i, CharClass::kWhitespace); }
  bool is_letter(size_t i) const { return is(i, CharClass::kLetter); }
  bool is_number(size_t i) const { return is(i, CharClass::kNumber); }
  // [^\s\p{L}\p{N}]: punctuation, symbols and the rest.
  bool is_other(size_t i) const { return i < size() && !is_space(i) && !is_letter(i) && !is_number(i); }
  bool is_newline(size_t i) const { return i < size() && (cp[i] == '\r' || cp[i] == '\n'); }
  uint32_t lower_ascii(size_t i) const {
    if (i >= size()) return 0;
    return cp[i] >= 'A' && cp[i] <= 'Z' ? cp[i] + 32 : cp[i];
  }
  std::string_view piece(size_t from, size_t to) const { return text.substr(at[from], at[to] - at[from]); }
};

// Length in chars of a contraction ('s 't 're 've 'm 'll 'd) at i, 0 if none; case-insensitive
// for llama3's (?i:...), exact (lowercase only) for gpt-2's.
size_t pre_contraction(const PreChars& c, size_t i, bool any_case) {
  if (c.cp[i] != '\'' || i + 1 >= c.size()) return 0;
  auto ch = [&](size_t k) { return any_case ? c.lower_ascii(k) : (k < c.size() ? c.cp[k] : 0); };
  const uint32_t a = ch(i + 1), b = ch(i + 2);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// End of the whitespace run from i; a run followed by non-space leaves its last char to the
// next piece when it has more than one (\s+(?!\S) then \s+).
size_t pre_space_run_end(const PreChars& c, size_t i) {
  size_t end = i;
  while (c.is_space(end)) ++end;
  return (end < c.size() && end - i > 1) ? end - 1 : end;
}

using PreOut = std::vector<std::string_view>;

// 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
void pre_split_gpt2(std::string_view s, PreOut& out) {
  const PreChars c(s);
  for (size_t i = 0; i < c.size();) {
    size_t end = i + pre_contraction(c, i, false);
    if (end == i) {
      const size_t body = (c.cp[i] == ' ' && i + 1 < c.size() && !c.is_space(i + 1)) ? i + 1 : i;
      end = body;
      if (c.is_letter(body)) {
        while (c.is_letter(end)) ++end;
      } else if (c.is_number(body)) {
        while (c.is_number(end)) ++end;
      } else if (c.is_other(body)) {
        while (c.is_other(end)) ++end;
      } else {
        end = pre_space_run_end(c, i);
      }
    }
    out.push_back(c.piece(i, end));
    i = end;
  }
}

// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,max_digits}|
//  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
void pre_split_llama3(std::string_view s, size_t max_digits, PreOut& out) {
  const PreChars c(s);
  for (size_t i = 0; i < c.size();) {
    size_t end = i + pre_contraction(c, i, true);
    if (end > i) {
      // matched
    } else if (!c.is_newline(i) && !c.is_number(i) && (c.is_letter(i) || c.is_letter(i + 1))) {
      end = i + 1;
      while (c.is_letter(end)) ++end;
    } else if (c.is_number(i)) {
      while (c.is_number(end) && end - i < max_digits) ++end;
    } else if (c.is_other(c.cp[i] == ' ' ? i + 1 : i)) {
      end = c.cp[i] == ' ' ? i + 1 : i;
      while (c.is_other(end)) ++end;
      while (c.is_newline(end)) ++end;
    } else {
      // Whitespace: up to the run's last \r or \n if it has one, else as gpt-2.
      size_t run = i, last_newline = i;
      for (; c.is_space(run); ++run)
        if (c.is_newline(run)) last_newline = run + 1;
      end = last_newline > i ? last_newline : pre_space_run_end(c, i);
    }
    out.push_back(c.piece(i, end));
    i = end;
  }
}

// One regex applied to a piece: its matches, leftmost first, and the text between them become
// pieces. match(chars, i) returns the end of the match starting at char i (i itself: none).
template <typename Match>
void pre_split_matches(std::string_view s, Match match, PreOut& out) {
  const PreChars c(s);
  size_t gap = 0;
  for (size_t i = 0; i < c.size();) {
    const size_t end = match(c, i);
    if (end == i) {
      ++i;
      continue;
    }
    if (gap < i) out.push_back(c.piece(gap, i));
    out.push_back(c.piece(i, end));
    i = gap = end;
  }
  if (gap < c.size()) out.push_back(c.piece(gap, c.size()));
}

// Runs of chars `take` accepts: exactly `count` of them (\p{N}, [0-9][0-9][0-9]), or as many
// as follow when count is 0 ([\p{P}...]+). With space_prefix, one \s may lead (\s?X+).
template <typename Take>
void pre_split_runs(std::string_view s, Take take, size_t count, PreOut& out, bool space_prefix = false) {
  pre_split_matches(
      s,
      [&](const PreChars& c, size_t i) {
        const size_t body = space_prefix && c.is_space(i) && i + 1 < c.size() && take(c, i + 1) ? i + 1 : i;
        size_t end = body;
        while (end < c.size() && take(c, end) && (count == 0 || end - body < count)) ++end;
        return end == body || (count > 0 && end - body < count) ? i : end;
      },
      out);
}

bool pre_falcon_punct(const PreChars& c, size_t i) {
  if (c.is(i, CharClass::kPunctuation)) return true;
  const uint32_t x = c.cp[i];
  return x == '$' || x == '+' || x == '<' || x == '=' || x == '>' || x == '^' || x == '~' || x == '|' || x == '`';
}

// deepseek-coder's [一-龥ࠀ-一가-퟿]: CJK ideographs, U+0800..U+4E00 and Hangul syllables on. The
// White_Space characters in those ranges (U+1680, U+2000..U+200A, U+3000, ...) never match in
// llama.cpp (its std::wregex path; probed over the whole range), so they do not here either.
bool pre_deepseek_cjk(const PreChars& c, size_t i) {
  const uint32_t x = c.cp[i];
  if (c.is_space(i)) return false;
  return (x >= 0x4E00 && x <= 0x9FA5) || (x >= 0x0800 && x <= 0x4E00) || (x >= 0xAC00 && x <= 0xD7FF);
}

// Applies `split` to every piece of `in`.
template <typename Split>
PreOut pre_each(const PreOut& in, Split split) {
  PreOut out;
  for (std::string_view piece : in) split(piece, out);
  return out;
}

}  // namespace

PreTokenizerChoice pre_tokenizer_named(std::string_view name) {
  static constexpr std::pair<std::string_view, PreTokenizer> kNames[] = {
      {"", PreTokenizer::kGpt2},           {"gpt-2", PreTokenizer::kGpt2},
      {"mpt", PreTokenizer::kGpt2},        {"olmo", PreTokenizer::kGpt2},
      {"jais", PreTokenizer::kGpt2},       {"phi-2", PreTokenizer::kGpt2},
      {"roberta-bpe", PreTokenizer::kGpt2}, {"gigachat", PreTokenizer::kGpt2},
      {"jina-es", PreTokenizer::kGpt2},    {"jina-de", PreTokenizer::kGpt2},
      {"jina-v1-en", PreTokenizer::kGpt2}, {"jina-v2-es", PreTokenizer::kGpt2},
      {"jina-v2-de", PreTokenizer::kGpt2}, {"jina-v2-code", PreTokenizer::kGpt2},
      {"llama3", PreTokenizer::kLlama3},   {"llama-v3", PreTokenizer::kLlama3},
      {"llama-bpe", PreTokenizer::kLlama3}, {"falcon3", PreTokenizer::kLlama3},
      {"dbrx", PreTokenizer::kLlama3},     {"smaug-bpe", PreTokenizer::kLlama3},
      {"chatglm-bpe", PreTokenizer::kLlama3}, {"qwen2", PreTokenizer::kQwen2},
      {"deepseek-r1-qwen", PreTokenizer::kQwen2}, {"stablelm2", PreTokenizer::kQwen2},
      {"starcoder", PreTokenizer::kDigitsThenGpt2}, {"refact", PreTokenizer::kDigitsThenGpt2},
      {"command-r", PreTokenizer::kDigitsThenGpt2}, {"smollm", PreTokenizer::kDigitsThenGpt2},
      {"codeshell", PreTokenizer::kDigitsThenGpt2}, {"exaone", PreTokenizer::kDigitsThenGpt2},
      {"minerva-7b", PreTokenizer::kDigitsThenGpt2}, {"falcon", PreTokenizer::kFalcon},
      {"deepseek-coder", PreTokenizer::kDeepseekCoder},
  };
  for (const auto& [n, kind] : kNames)
    if (n == name) return {kind, true};
  return {PreTokenizer::kGpt2, false};
}

std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text) {
  PreOut out;
  const auto gpt2 = [](std::string_view s, PreOut& o) { pre_split_gpt2(s, o); };
  const auto digit = [](const PreChars& c, size_t i) { return c.is_number(i); };
  switch (kind) {
    case PreTokenizer::kGpt2:
      pre_split_gpt2(text, out);
      break;
    case PreTokenizer::kLlama3:
      pre_split_llama3(text, 3, out);
      break;
    case PreTokenizer::kQwen2:
      pre_split_llama3(text, 1, out);
      break;
    case PreTokenizer::kDigitsThenGpt2:
      pre_split_runs(text, digit, 1, out);
      out = pre_each(out, gpt2);
      break;
    case PreTokenizer::kFalcon: {
      pre_split_runs(text, pre_falcon_punct, 0, out);
      out = pre_each(out, gpt2);
      const auto ascii_digit = [](const PreChars& c, size_t i) { return c.cp[i] >= '0' && c.cp[i] <= '9'; };
      out = pre_each(out, [&](std::string_view s, PreOut& o) { pre_split_runs(s, ascii_digit, 3, o); });
      break;
    }
    case PreTokenizer::kDeepseekCoder: {
      const auto newline = [](const PreChars& c, size_t i) { return c.is_newline(i); };
      const auto letter = [](const PreChars& c, size_t i) { return c.is_letter(i); };
      const auto punct = [](const PreChars& c, size_t i) { return c.is(i, CharClass::kPunctuation); };
      pre_split_runs(text, newline, 1, out);
      out = pre_each(out, [&](std::string_view s, PreOut& o) { pre_split_runs(s, letter, 0, o, true); });
      out = pre_each(out, [&](std::string_view s, PreOut& o) { pre_split_runs(s, punct, 0, o, true); });
      out = pre_each(out, [&](std::string_view s, PreOut& o) { pre_split_runs(s, pre_deepseek_cjk, 0, o); });
      out = pre_each(out, [&](std::string_view s, PreOut& o) { pre_split_runs(s, digit, 1, o); });
      break;
    }
  }
  return out;
}

}  // namespace recur
