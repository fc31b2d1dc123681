#include "engine/tokenizer_spm.h"

#include <queue>

#include <fmt/format.h>

#include "engine/utf8.h"

namespace recur {
namespace {

constexpr std::string_view kSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space

class SpmTokenizer final : public Tokenizer {
 public:
  explicit SpmTokenizer(Vocabulary v) : Tokenizer(std::move(v)) {
    for (int b = 0; b < 256; ++b) {
      auto it = id_of_.find(fmt::format("<0x{:02X}>", b));
      byte_token_[b] = it == id_of_.end() ? -1 : it->second;
    }
  }

  std::vector<TokenId> encode(std::string_view text, bool add_bos) const override {
    std::vector<TokenId> out;
    if (add_bos && vocab_.bos >= 0) out.push_back(vocab_.bos);
    if (text.empty()) return out;
    std::string s;
    if (vocab_.add_space_prefix) s += kSpace;
    for (char c : text) {
      if (c == ' ') s += kSpace;
      else s += c;
    }
    // Symbols: one per UTF-8 character, as a doubly linked list over s.
    struct Symbol {
      size_t begin, len;
      int prev, next;
    };
    std::vector<Symbol> sym;
    for (size_t i = 0; i < s.size();) {
      size_t n = utf8::char_length(s, i);
      sym.push_back({i, n, int(sym.size()) - 1, int(sym.size()) + 1});
      i += n;
    }
    sym.back().next = -1;

    // Highest score first; among equal scores the leftmost pair, as SentencePiece does.
    struct Candidate {
      float score;
      int left;
      size_t len;
      bool operator<(const Candidate& o) const { return score < o.score || (score == o.score && left > o.left); }
    };
    std::priority_queue<Candidate> queue;
    auto try_pair = [&](int left) {
      if (left < 0 || sym[left].next < 0) return;
      const Symbol& a = sym[left];
      const Symbol& b = sym[a.next];
      auto it = id_of_.find(std::string(s.substr(a.begin, a.len + b.len)));
      if (it == id_of_.end()) return;
      float score = vocab_.scores.empty() ? 0.f : vocab_.scores[it->second];
      queue.push({score, left, a.len + b.len});
    };
    for (int i = 0; i + 1 < int(sym.size()); ++i) try_pair(i);
    while (!queue.empty()) {
      Candidate c = queue.top();
      queue.pop();
      Symbol& a = sym[c.left];
      if (a.len == 0 || a.next < 0 || a.len + sym[a.next].len != c.len) continue;  // stale
      Symbol& b = sym[a.next];
      a.len += b.len;
      b.len = 0;
      a.next = b.next;
      if (a.next >= 0) sym[a.next].prev = c.left;
      try_pair(a.prev);
      try_pair(c.left);
    }
    for (int i = 0; i >= 0; i = sym[i].next) {
      std::string_view piece(s.data() + sym[i].begin, sym[i].len);
      auto it = id_of_.find(std::string(piece));
      if (it != id_of_.end()) {
        out.push_back(it->second);
        continue;
      }
      for (unsigned char byte : piece) {
        if (byte_token_[byte] >= 0) out.push_back(byte_token_[byte]);
        else if (vocab_.unknown >= 0) out.push_back(vocab_.unknown);
      }
    }
    return out;
  }

  std::string piece(TokenId id) const override {
    if (id < 0 || size_t(id) >= vocab_.tokens.size()) return {};
    const std::string& t = vocab_.tokens[id];
    switch (vocab_.kinds[id]) {
      case TokenKind::kControl: case TokenKind::kUnused: return {};
      case TokenKind::kByte:
        if (t.size() == 6 && t.starts_with("<0x")) return std::string(1, char(std::stoi(t.substr(3, 2), nullptr, 16)));
        return {};
      default: break;
    }
    std::string out;
    for (size_t i = 0; i < t.size();) {
      if (std::string_view(t).substr(i, 3) == kSpace) {
        out += ' ';
        i += 3;
      } else {
        out += t[i++];
      }
    }
    return out;
  }

 private:
  TokenId byte_token_[256];
};

}  // namespace

Result<std::unique_ptr<Tokenizer>> make_spm_tokenizer(Vocabulary vocab) {
  if (!vocab.scores.empty() && vocab.scores.size() != vocab.tokens.size())
    return invalid_argument("SPM vocabulary: {} scores for {} tokens", vocab.scores.size(), vocab.tokens.size());
  return std::unique_ptr<Tokenizer>(new SpmTokenizer(std::move(vocab)));
}

}  // namespace recur
