// Tokenizers built from a GGUF vocabulary: SentencePiece-style (tokenizer.ggml.model = "llama")
// with byte fallback, and byte-level BPE ("gpt2").
//
// Both round-trip: decode(encode(text)) == text for any UTF-8 (or arbitrary byte) input, the
// SPM path through <0xXX> byte tokens for characters outside the vocabulary, the BPE path
// because every byte has a token. Immutable after construction, so thread-safe to share.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "engine/gguf.h"

namespace recur {

using TokenId = int32_t;

// GGUF tokenizer.ggml.token_type values.
enum class TokenKind : int32_t { kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6 };

struct Vocabulary {
  std::string model;                 // "llama" (SPM) or "gpt2" (BPE)
  std::vector<std::string> tokens;
  std::vector<float> scores;         // SPM merge priorities; empty for BPE
  std::vector<TokenKind> kinds;
  std::vector<std::string> merges;   // BPE: "left right", highest priority first
  std::string pre;                   // BPE: tokenizer.ggml.pre ("llama3", "qwen2", ...); empty if absent
  TokenId bos = -1, eos = -1, unknown = -1;
  bool add_bos = true;
  bool add_space_prefix = true;      // SPM: prepend "▁" to the text

  // Reads tokenizer.ggml.* keys; errors name the key that is missing or malformed.
  static Result<Vocabulary> from_gguf(const gguf::File& file);
  // Writes the same keys (for `recur model new`).
  void to_gguf(gguf::Writer& writer) const;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  // Text to ids; with add_bos, the BOS id (if the vocabulary has one) comes first.
  virtual std::vector<TokenId> encode(std::string_view text, bool add_bos) const = 0;
  // The bytes token `id` stands for (control tokens decode to nothing).
  virtual std::string piece(TokenId id) const = 0;
  // Concatenated pieces; with strip_space_prefix, the leading space encode() added is removed.
  std::string decode(const std::vector<TokenId>& ids, bool strip_space_prefix = true) const;

  const Vocabulary& vocabulary() const { return vocab_; }
  size_t size() const { return vocab_.tokens.size(); }

  static Result<std::unique_ptr<Tokenizer>> create(Vocabulary vocab);

 protected:
  explicit Tokenizer(Vocabulary vocab);
  Vocabulary vocab_;
  std::unordered_map<std::string, TokenId> id_of_;
};

}  // namespace recur
