// BPE pre-tokenizers: the expected splits below are worked out by hand from each regex
// (tokenizer_pre.h quotes them), alternative by alternative, leftmost first.
#include "engine/tokenizer_pre.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "engine/tokenizer.h"
#include "engine/tokenizer_bpe.h"

namespace recur {
namespace {

using Pieces = std::vector<std::string>;

Pieces pretest_split(PreTokenizer kind, std::string_view text) {
  auto parts = pre_tokenize(kind, text);
  return Pieces(parts.begin(), parts.end());
}

TEST(PreTokenizer, Gpt2ContractionsAreLowercaseAndSpacesGoWithTheNextWord) {
  EXPECT_EQ(pretest_split(PreTokenizer::kGpt2, "I'm here, they're 12345 cafés!"),
            (Pieces{"I", "'m", " here", ",", " they", "'re", " 12345", " cafés", "!"}));
  // 'T is no contraction for gpt-2: the apostrophe is ` ?[^\s\p{L}\p{N}]+`.
  EXPECT_EQ(pretest_split(PreTokenizer::kGpt2, "DON'T"), (Pieces{"DON", "'", "T"}));
  // \s+(?!\S) leaves a run's last space to the word; a run at the end stays whole.
  EXPECT_EQ(pretest_split(PreTokenizer::kGpt2, "a   b  \n"), (Pieces{"a", "  ", " b", "  \n"}));
  // Unicode classes: Greek and accented letters are \p{L}, ½ and ² are \p{N}, NBSP is \s
  // but only the ASCII space is the optional ` ?` prefix.
  EXPECT_EQ(pretest_split(PreTokenizer::kGpt2, "naïve Ελληνικά ½ ²"), (Pieces{"naïve", " Ελληνικά", " ½", " ²"}));
  EXPECT_EQ(pretest_split(PreTokenizer::kGpt2, "x\u00A0y"), (Pieces{"x", "\u00A0", "y"}));
  EXPECT_EQ(pretest_split(PreTokenizer::kGpt2, "Hello!!! (yes)"), (Pieces{"Hello", "!!!", " (", "yes", ")"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsByThreeAndKeepsNewlinesWithPunctuation) {
  // (?i:...) contractions, any case.
  EXPECT_EQ(pretest_split(PreTokenizer::kLlama3, "DON'T I'M we'll"),
            (Pieces{"DON", "'T", " I", "'M", " we", "'ll"}));
  // \p{N}{1,3}, and a space before digits is a piece of its own (only letters take a prefix).
  EXPECT_EQ(pretest_split(PreTokenizer::kLlama3, "1234567 42"), (Pieces{"123", "456", "7", " ", "42"}));
  // [^\r\n\p{L}\p{N}]?\p{L}+ takes any one non-letter prefix, punctuation and tabs included.
  EXPECT_EQ(pretest_split(PreTokenizer::kLlama3, "(hello\tworld"), (Pieces{"(hello", "\tworld"}));
  // ` ?[^\s\p{L}\p{N}]+[\r\n]*` keeps the newlines after punctuation; `\s*[\r\n]+` ends at the
  // run's last newline; then \s+(?!\S) leaves one space to the word.
  EXPECT_EQ(pretest_split(PreTokenizer::kLlama3, "hi!\r\n\r\nbye"), (Pieces{"hi", "!\r\n\r\n", "bye"}));
  EXPECT_EQ(pretest_split(PreTokenizer::kLlama3, "a \n\n  b"), (Pieces{"a", " \n\n", " ", " b"}));
  EXPECT_EQ(pretest_split(PreTokenizer::kLlama3, "ied 4 ½ months"), (Pieces{"ied", " ", "4", " ", "½", " months"}));
  EXPECT_EQ(pretest_split(PreTokenizer::kLlama3, "日本語のテキスト"), (Pieces{"日本語のテキスト"}));
}

TEST(PreTokenizer, Qwen2SplitsEveryDigit) {
  EXPECT_EQ(pretest_split(PreTokenizer::kQwen2, "x1234 I'M"), (Pieces{"x", "1", "2", "3", "4", " I", "'M"}));
}

TEST(PreTokenizer, StagedRegexesSplitThePreviousPieces) {
  // \p{N} first, so gpt-2's ` ?\p{N}+` never sees a space before a digit.
  EXPECT_EQ(pretest_split(PreTokenizer::kDigitsThenGpt2, "ied 4 ½ months"),
            (Pieces{"ied", " ", "4", " ", "½", " months"}));
  EXPECT_EQ(pretest_split(PreTokenizer::kDigitsThenGpt2, "a 12"), (Pieces{"a", " ", "1", "2"}));
  // falcon: punctuation and $+<=>^~|` runs, then gpt-2, then [0-9][0-9][0-9].
  EXPECT_EQ(pretest_split(PreTokenizer::kFalcon, "a+b=c"), (Pieces{"a", "+", "b", "=", "c"}));
  EXPECT_EQ(pretest_split(PreTokenizer::kFalcon, "x, 1234!"), (Pieces{"x", ",", " ", "123", "4", "!"}));
}

TEST(PreTokenizer, DeepseekCoderAppliesFiveRegexesWithoutGpt2) {
  // \s?\p{L}+ takes "ied" and " months" and leaves " 4 ½" between them, which \p{N} splits.
  EXPECT_EQ(pretest_split(PreTokenizer::kDeepseekCoder, "ied 4 ½ months"),
            (Pieces{"ied", " ", "4", " ", "½", " months"}));
  // [\r\n] first; letters run across scripts until the CJK/Hangul regex cuts them apart.
  EXPECT_EQ(pretest_split(PreTokenizer::kDeepseekCoder, "hello世界, 안녕\nx"),
            (Pieces{"hello", "世界", ",", " ", "안녕", "\n", "x"}));
  // An ideographic space leads a word (\s?) and is not part of the CJK class.
  EXPECT_EQ(pretest_split(PreTokenizer::kDeepseekCoder, "ab\u3000cd"), (Pieces{"ab", "\u3000cd"}));
}

TEST(PreTokenizer, PiecesCoverTheTextForEveryKind) {
  const std::string text = "It's 2024:\n\n  naïve  日本 ½\r\n\t\xFF\xC3(end)   ";
  for (PreTokenizer kind : {PreTokenizer::kGpt2, PreTokenizer::kLlama3, PreTokenizer::kQwen2,
                            PreTokenizer::kDigitsThenGpt2, PreTokenizer::kFalcon, PreTokenizer::kDeepseekCoder}) {
    std::string joined;
    for (std::string_view p : pre_tokenize(kind, text)) {
      EXPECT_FALSE(p.empty());
      joined += p;
    }
    EXPECT_EQ(joined, text) << "kind " << int(kind);
  }
  // Arbitrary bytes (invalid UTF-8 included) split into non-empty pieces that cover them too.
  std::mt19937 rng(5);
  for (int trial = 0; trial < 100; ++trial) {
    std::string bytes(size_t(rng() % 48), '\0');
    for (char& b : bytes) b = char(rng() % 256);
    for (PreTokenizer kind : {PreTokenizer::kGpt2, PreTokenizer::kLlama3, PreTokenizer::kFalcon,
                              PreTokenizer::kDeepseekCoder}) {
      std::string joined;
      for (std::string_view p : pre_tokenize(kind, bytes)) {
        EXPECT_FALSE(p.empty());
        joined += p;
      }
      EXPECT_EQ(joined, bytes) << "kind " << int(kind) << " trial " << trial;
    }
  }
}

TEST(PreTokenizer, NamesMapAsLlamaCppAndUnknownFallsBackWithAWarning) {
  EXPECT_EQ(pre_tokenizer_named("llama-bpe").kind, PreTokenizer::kLlama3);
  EXPECT_EQ(pre_tokenizer_named("qwen2").kind, PreTokenizer::kQwen2);
  EXPECT_EQ(pre_tokenizer_named("starcoder").kind, PreTokenizer::kDigitsThenGpt2);
  EXPECT_TRUE(pre_tokenizer_named("").known) << "no key: gpt-2, as before the key was read";
  EXPECT_EQ(pre_tokenizer_named("deepseek-coder").kind, PreTokenizer::kDeepseekCoder);
  const PreTokenizerChoice unknown = pre_tokenizer_named("deepseek-llm");
  EXPECT_FALSE(unknown.known);
  EXPECT_EQ(unknown.kind, PreTokenizer::kGpt2);

  Vocabulary v;
  v.model = "gpt2";
  v.add_space_prefix = false;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(byte_to_unicode(uint8_t(b)));
  v.tokens.push_back("xyz");  // a whole word without merges that build it
  v.kinds.assign(v.tokens.size(), TokenKind::kNormal);
  v.pre = "deepseek-llm";
  ::testing::internal::CaptureStderr();
  auto fallback = Tokenizer::create(v);
  const std::string warning = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(fallback.has_value());
  EXPECT_NE(warning.find("'deepseek-llm'"), std::string::npos) << warning;
  const TokenId xyz = TokenId(v.tokens.size() - 1);
  EXPECT_EQ((*fallback)->encode("xyz", false).size(), 3u) << "gpt-2 merges: none, so three bytes";
  // llama3's ignore_merges: the word is a token, so it is taken whole.
  v.pre = "llama3";
  auto llama3 = Tokenizer::create(v);
  ASSERT_TRUE(llama3.has_value());
  EXPECT_EQ((*llama3)->encode("xyz", false), (std::vector<TokenId>{xyz}));
  EXPECT_EQ((*llama3)->decode((*llama3)->encode("x1234 y", false)), "x1234 y");
}

}  // namespace
}  // namespace recur
