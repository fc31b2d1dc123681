#include "engine/tokenizer_bpe.h"

#include <algorithm>
#include <array>
#include <limits>

#include "core/log.h"
#include "engine/tokenizer_pre.h"
#include "engine/utf8.h"

namespace recur {
namespace {

const std::array<std::string, 256>& byte_table() {
  static const std::array<std::string, 256> table = [] {
    std::array<std::string, 256> t;
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[b] = utf8::encode(printable ? uint32_t(b) : next++);
    }
    return t;
  }();
  return table;
}

class BpeTokenizer final : public Tokenizer {
 public:
  BpeTokenizer(Vocabulary v, PreTokenizer pre) : Tokenizer(std::move(v)), pre_(pre) {
    for (size_t r = 0; r < vocab_.merges.size(); ++r) rank_.emplace(vocab_.merges[r], int(r));
    const auto& table = byte_table();
    for (int b = 0; b < 256; ++b) {
      auto it = id_of_.find(table[b]);
      byte_token_[b] = it == id_of_.end() ? -1 : it->second;
      unicode_to_byte_.emplace(table[b], uint8_t(b));
    }
    // User-defined tokens hold raw text (e.g. runs of spaces in MPT's and GPT-NeoX's vocabularies).
    for (size_t id = 0; id < vocab_.tokens.size(); ++id)
      if (vocab_.kinds[id] == TokenKind::kUserDefined && !vocab_.tokens[id].empty())
        user_defined_by_first_byte_[uint8_t(vocab_.tokens[id][0])].push_back(TokenId(id));
    for (auto& ids : user_defined_by_first_byte_)
      std::stable_sort(ids.begin(), ids.end(),
                       [&](TokenId a, TokenId b) { return vocab_.tokens[a].size() > vocab_.tokens[b].size(); });
  }

  // As llama.cpp does, user-defined tokens match in the raw text first (the longest one at each
  // position, left to right); the text between them goes through pre-tokenization and merges.
  std::vector<TokenId> encode(std::string_view text, bool add_bos) const override {
    std::vector<TokenId> out;
    if (add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
    size_t start = 0;
    for (size_t k = 0; k < text.size();) {
      TokenId hit = user_defined_token_at(text, k);
      if (hit < 0) {
        ++k;
        continue;
      }
      encode_between_user_tokens(text.substr(start, k - start), out);
      out.push_back(hit);
      k += vocab_.tokens[hit].size();
      start = k;
    }
    encode_between_user_tokens(text.substr(start), out);
    return out;
  }

 private:
  TokenId user_defined_token_at(std::string_view text, size_t k) const {
    for (TokenId id : user_defined_by_first_byte_[uint8_t(text[k])])
      if (text.substr(k).starts_with(vocab_.tokens[id])) return id;
    return -1;
  }

  void encode_between_user_tokens(std::string_view text, std::vector<TokenId>& out) const {
    const auto& table = byte_table();
    for (std::string_view word : pre_tokenize(pre_, text)) {
      std::vector<std::string> parts;
      for (unsigned char b : word) parts.push_back(table[b]);
      if (pre_ == PreTokenizer::kLlama3 && parts.size() > 1) {
        // llama3's ignore_merges: a word the vocabulary holds whole is that token, merges or not.
        std::string whole;
        for (const std::string& p : parts) whole += p;
        if (auto it = id_of_.find(whole); it != id_of_.end()) {
          out.push_back(it->second);
          continue;
        }
      }
      // Merge the lowest-ranked adjacent pair until no pair has a rank.
      for (;;) {
        int best = std::numeric_limits<int>::max();
        size_t at = 0;
        for (size_t k = 0; k + 1 < parts.size(); ++k) {
          auto it = rank_.find(parts[k] + " " + parts[k + 1]);
          if (it != rank_.end() && it->second < best) best = it->second, at = k;
        }
        if (best == std::numeric_limits<int>::max()) break;
        parts[at] += parts[at + 1];
        parts.erase(parts.begin() + long(at) + 1);
      }
      for (const std::string& p : parts) {
        auto it = id_of_.find(p);
        if (it != id_of_.end()) {
          out.push_back(it->second);
          continue;
        }
        for (size_t k = 0; k < p.size();) {  // not in the vocabulary: one token per byte
          size_t n = utf8::char_length(p, k);
          auto b = unicode_to_byte_.find(p.substr(k, n));
          if (b != unicode_to_byte_.end() && byte_token_[b->second] >= 0) out.push_back(byte_token_[b->second]);
          else if (vocab_.unknown >= 0) out.push_back(vocab_.unknown);
          k += n;
        }
      }
    }
  }

 public:
  std::string piece(TokenId id) const override {
    if (id < 0 || size_t(id) >= vocab_.tokens.size()) return {};
    if (vocab_.kinds[id] == TokenKind::kControl || vocab_.kinds[id] == TokenKind::kUnused) return {};
    const std::string& t = vocab_.tokens[id];
    std::string out;
    for (size_t k = 0; k < t.size();) {
      size_t n = utf8::char_length(t, k);
      auto b = unicode_to_byte_.find(t.substr(k, n));
      if (b != unicode_to_byte_.end()) out += char(b->second);
      else out += t.substr(k, n);  // user-defined tokens may hold raw text
      k += n;
    }
    return out;
  }

 private:
  PreTokenizer pre_;
  std::unordered_map<std::string, int> rank_;
  std::unordered_map<std::string, uint8_t> unicode_to_byte_;
  TokenId byte_token_[256];
  std::vector<TokenId> user_defined_by_first_byte_[256];  // longest first
};

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return byte_table()[b]; }

std::vector<std::string_view> bpe_pre_tokenize(std::string_view text) {
  return pre_tokenize(PreTokenizer::kGpt2, text);
}

Result<std::unique_ptr<Tokenizer>> make_bpe_tokenizer(Vocabulary vocab) {
  for (size_t r = 0; r < vocab.merges.size(); ++r)
    if (vocab.merges[r].find(' ') == std::string::npos)
      return invalid_argument("BPE merge #{} '{}' has no space between its two parts", r, vocab.merges[r]);
  const PreTokenizerChoice pre = pre_tokenizer_named(vocab.pre);
  if (!pre.known)
    LOG_WARN("BPE pre-tokenizer '{}' (tokenizer.ggml.pre) is not implemented: splitting text as gpt-2 does, so "
             "tokens may differ from llama.cpp's",
             vocab.pre);
  return std::unique_ptr<Tokenizer>(new BpeTokenizer(std::move(vocab), pre.kind));
}

}  // namespace recur
