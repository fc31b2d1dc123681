// A Session over a float64 reference forward (hybrid_reference.h, mla_reference.h): one
// sequence, each step's double logits rounded to float. Ref needs Ref(file, config) and
// std::vector<double> step(int token).
#pragma once

#include <span>
#include <vector>

#include "engine/gguf.h"
#include "engine/model.h"
#include "engine/model_config.h"

namespace recur {

template <class Ref>
class ReferenceSession final : public Session {
 public:
  ReferenceSession(const gguf::File& f, const ModelConfig& c, int max_tokens)
      : ref_(f, c), vocab_(c.vocab), max_tokens_(max_tokens) {}
  Result<std::span<const float>> step(TokenId token) override {
    if (token < 0 || token >= vocab_) return invalid_argument("token {} outside the vocabulary of {}", token, vocab_);
    if (pos_ >= max_tokens_) return invalid_argument("sequence is full ({} tokens)", max_tokens_);
    const std::vector<double> l = ref_.step(token);
    logits_.assign(l.begin(), l.end());
    ++pos_;
    return std::span<const float>(logits_);
  }
  int position() const override { return pos_; }

 private:
  Ref ref_;
  int vocab_, max_tokens_, pos_ = 0;
  std::vector<float> logits_;
};

}  // namespace recur
