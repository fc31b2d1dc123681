#include "engine/tokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include <fmt/format.h>

#include "engine/tokenizer_bpe.h"

namespace recur {
namespace {

const std::string kSp = "\xE2\x96\x81";

Vocabulary spm_vocab() {
  Vocabulary v;
  v.model = "llama";
  auto add = [&](std::string t, float score, TokenKind k = TokenKind::kNormal) {
    v.tokens.push_back(std::move(t));
    v.scores.push_back(score);
    v.kinds.push_back(k);
  };
  add("<unk>", 0, TokenKind::kUnknown);
  add("<s>", 0, TokenKind::kControl);
  add("</s>", 0, TokenKind::kControl);
  for (int b = 0; b < 256; ++b) add(fmt::format("<0x{:02X}>", b), 0, TokenKind::kByte);
  for (const char* c : {"h", "e", "l", "o", "w", "r", "d", "a", "b"}) add(c, -10);
  add(kSp, -5);
  add(kSp + "h", -4);
  add(kSp + "he", -3);
  add(kSp + "hel", -2.5f);
  add(kSp + "hello", -1);
  add("ll", -2);
  add("llo", -1.5f);
  add(kSp + "w", -4);
  add("or", -3);
  add("ld", -3);
  add(kSp + "wor", -2);
  add(kSp + "world", -1);
  // "ab" scores higher than "ba": for "aba" score order gives [ab, a] while a left-to-right
  // greedy that merged "ba" first would give [a, ba].
  add("ab", -0.5f);
  add("ba", -0.7f);
  v.unknown = 0;
  v.bos = 1;
  v.eos = 2;
  return v;
}

std::unique_ptr<Tokenizer> make(Vocabulary v) {
  auto t = Tokenizer::create(std::move(v));
  EXPECT_TRUE(t.has_value());
  return std::move(*t);
}

TEST(SpmTokenizer, MergesByScoreAndRoundTrips) {
  auto tok = make(spm_vocab());
  const auto& vocab = tok->vocabulary();
  auto id = [&](const std::string& s) { return TokenId(std::find(vocab.tokens.begin(), vocab.tokens.end(), s) - vocab.tokens.begin()); };
  std::vector<TokenId> ids = tok->encode("hello world", true);
  EXPECT_EQ(ids, (std::vector<TokenId>{1, id(kSp + "hello"), id(kSp + "world")}));
  EXPECT_EQ(tok->decode(ids), "hello world");

  // Highest score first: "ab" (-0.5) beats "ba" (-0.7).
  std::vector<TokenId> aba = tok->encode("aba", false);
  ASSERT_EQ(aba.size(), 3u);  // ▁ + ab + a
  EXPECT_EQ(aba[1], id("ab"));
  EXPECT_EQ(aba[2], id("a"));
}

TEST(SpmTokenizer, ByteFallbackRoundTripsAnyText) {
  auto tok = make(spm_vocab());
  for (std::string text : {"héllo wörld", "日本語 テキスト", "emoji 🎉 and\ttabs\nnewlines", "  leading spaces", ""}) {
    std::vector<TokenId> ids = tok->encode(text, false);
    EXPECT_EQ(tok->decode(ids), text) << text;
  }
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::string text(size_t(rng() % 40), '\0');
    for (char& c : text) c = char(rng() % 256);
    if (text.find('\0') != std::string::npos) continue;
    EXPECT_EQ(tok->decode(tok->encode(text, true)), text);
  }
}

Vocabulary bpe_vocab() {
  Vocabulary v;
  v.model = "gpt2";
  v.add_space_prefix = false;
  for (int b = 0; b < 256; ++b) v.tokens.push_back(byte_to_unicode(uint8_t(b)));
  v.merges = {"h e", "l l", "he ll", "hell o", "\xC4\xA0 w", "\xC4\xA0w o", "r l", "rl d", "\xC4\xA0wo rld"};
  for (const std::string& m : v.merges) {
    std::string joined = m;
    joined.erase(joined.find(' '), 1);
    v.tokens.push_back(joined);
  }
  v.tokens.push_back("<|endoftext|>");
  v.kinds.assign(v.tokens.size(), TokenKind::kNormal);
  v.kinds.back() = TokenKind::kControl;
  v.eos = v.bos = TokenId(v.tokens.size() - 1);
  return v;
}

TEST(BpeTokenizer, PreTokenizesLikeGpt2) {
  auto parts = bpe_pre_tokenize("Hello, world!  It's 42\n");
  std::vector<std::string> got(parts.begin(), parts.end());
  EXPECT_EQ(got, (std::vector<std::string>{"Hello", ",", " world", "!", " ", " It", "'s", " 42", "\n"}));
}

TEST(BpeTokenizer, MergesByRankAndRoundTrips) {
  auto tok = make(bpe_vocab());
  const auto& vocab = tok->vocabulary();
  auto id = [&](const std::string& s) { return TokenId(std::find(vocab.tokens.begin(), vocab.tokens.end(), s) - vocab.tokens.begin()); };
  std::vector<TokenId> ids = tok->encode("hello world", false);
  EXPECT_EQ(ids, (std::vector<TokenId>{id("hello"), id("\xC4\xA0world")}));
  EXPECT_EQ(tok->decode(ids), "hello world");
  std::vector<TokenId> with_bos = tok->encode("hi", true);
  EXPECT_EQ(with_bos.front(), vocab.bos);
  EXPECT_EQ(tok->decode(with_bos), "hi") << "control tokens decode to nothing";

  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    std::string text(size_t(rng() % 40), '\0');
    for (char& c : text) c = char(rng() % 256);
    EXPECT_EQ(tok->decode(tok->encode(text, false)), text);
  }
}

// llama.cpp matches user-defined tokens (raw text, e.g. MPT's runs of spaces) before
// pre-tokenizing; its reference tokenizations of MPT's vocabulary depend on it.
TEST(BpeTokenizer, UserDefinedTokensMatchFirstLongestAtEachPosition) {
  Vocabulary v = bpe_vocab();
  for (const char* t : {"  ", "   ", "<|x|>"}) {
    v.tokens.push_back(t);
    v.kinds.push_back(TokenKind::kUserDefined);
  }
  auto tok = make(std::move(v));
  const auto& vocab = tok->vocabulary();
  auto id = [&](const std::string& s) { return TokenId(std::find(vocab.tokens.begin(), vocab.tokens.end(), s) - vocab.tokens.begin()); };
  EXPECT_EQ(tok->encode("hello   world", false), (std::vector<TokenId>{id("hello"), id("   "), id("w"), id("o"), id("rld")}));
  EXPECT_EQ(tok->encode("<|x|>hello  <|x|>", false), (std::vector<TokenId>{id("<|x|>"), id("hello"), id("  "), id("<|x|>")}));
  EXPECT_EQ(tok->encode("hello world", false), (std::vector<TokenId>{id("hello"), id("\xC4\xA0world")})) << "one space stays BPE";
  for (const char* text : {"hello   world", "<|x|>hello  <|x|>", " <|x", "    "})
    EXPECT_EQ(tok->decode(tok->encode(text, false)), text);
}

TEST(Vocabulary, RoundTripsThroughGgufAndRejectsBadKeys) {
  Vocabulary v = spm_vocab();
  v.pre = "llama3";  // tokenizer.ggml.pre is stored whatever the model (BPE reads it)
  gguf::Writer w;
  v.to_gguf(w);
  std::vector<std::byte> bytes = w.serialize();
  auto file = gguf::parse(bytes, "tok.gguf");
  ASSERT_TRUE(file.has_value()) << file.error().message();
  auto back = Vocabulary::from_gguf(*file);
  ASSERT_TRUE(back.has_value()) << back.error().message();
  EXPECT_EQ(back->tokens, v.tokens);
  EXPECT_EQ(back->scores, v.scores);
  EXPECT_EQ(back->bos, 1);
  EXPECT_EQ(back->kinds[5], TokenKind::kByte);
  EXPECT_EQ(back->pre, "llama3");

  gguf::Writer bad;
  bad.set("tokenizer.ggml.model", gguf::Value::of_string("llama"));
  auto f2 = gguf::parse(bad.serialize(), "bad.gguf");
  auto missing = Vocabulary::from_gguf(*f2);
  ASSERT_FALSE(missing.has_value());
  EXPECT_NE(missing.error().message().find("tokenizer.ggml.tokens"), std::string::npos);

  bad.set("tokenizer.ggml.tokens", gguf::Value::of_strings({"a", "b"}));
  bad.set("tokenizer.ggml.scores", gguf::Value::of_f32s({0.f}));
  auto f3 = gguf::parse(bad.serialize(), "bad.gguf");
  EXPECT_NE(Vocabulary::from_gguf(*f3).error().message().find("1 tokenizer scores for 2 tokens"), std::string::npos);

  bad.set("tokenizer.ggml.scores", gguf::Value::of_f32s({0.f, 1.f}));
  bad.set("tokenizer.ggml.bos_token_id", gguf::Value::of_u32(9));
  auto f4 = gguf::parse(bad.serialize(), "bad.gguf");
  EXPECT_NE(Vocabulary::from_gguf(*f4).error().message().find("outside the vocabulary"), std::string::npos);

  bad.set("tokenizer.ggml.model", gguf::Value::of_string("wordpiece"));
  auto f5 = gguf::parse(bad.serialize(), "bad.gguf");
  EXPECT_EQ(Vocabulary::from_gguf(*f5).error().code(), ErrorCode::kUnsupported);
}

}  // namespace
}  // namespace recur
