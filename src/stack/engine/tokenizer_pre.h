// BPE pre-tokenizers (GGUF tokenizer.ggml.pre): the regex split a vocabulary's text goes through
// before byte-level BPE merges, as llama.cpp applies them. Hand-written over UTF-8 with the
// Unicode classes of engine/unicode_class.h (std::regex has no \p{L}). Each kind names the
// regexes it implements; several regexes apply in turn, each splitting the previous pieces.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace recur {

enum class PreTokenizer {
  // gpt-2, mpt, olmo, jais, phi-2, roberta-bpe, jina-*, gigachat:
  //   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kGpt2,
  // llama3, llama-v3, llama-bpe, falcon3, dbrx, smaug-bpe, chatglm-bpe:
  //   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
  // and the vocabulary's whole words are taken as they are, before any merge (ignore_merges).
  kLlama3,
  // qwen2, deepseek-r1-qwen, stablelm2: llama3's regex with \p{N} (one digit a piece).
  kQwen2,
  // starcoder, refact, command-r, smollm, codeshell, exaone, minerva-7b: \p{N}, then gpt-2's.
  kDigitsThenGpt2,
  // falcon: [\p{P}\$\+<=>\^~\|`]+, then gpt-2's, then [0-9][0-9][0-9].
  kFalcon,
  // deepseek-coder: [\r\n], \s?\p{L}+, \s?\p{P}+, [一-龥ࠀ-一가-퟿]+, \p{N} in turn (no gpt-2 stage).
  kDeepseekCoder,
};

struct PreTokenizerChoice {
  PreTokenizer kind = PreTokenizer::kGpt2;
  bool known = true;  // false: `name` is not one recur implements, and kind is the gpt-2 fallback
};

// The pre-tokenizer a tokenizer.ggml.pre value names; empty (no key) is gpt-2's, recur's
// behaviour before it read the key.
PreTokenizerChoice pre_tokenizer_named(std::string_view name);

// `text` split into pieces (views into it) that BPE merges never cross; they cover it in order.
std::vector<std::string_view> pre_tokenize(PreTokenizer kind, std::string_view text);

}  // namespace recur
