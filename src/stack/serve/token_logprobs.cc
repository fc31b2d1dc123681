#include "serve/token_logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace recur::serve {

TokenLogprob token_logprob(std::span<const float> logits, TokenId token, int top, const Tokenizer& tok) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits) sum += std::exp(double(l) - double(max_logit));
  const double log_total = double(max_logit) + std::log(sum);
  TokenLogprob e;
  e.token = tok.piece(token);
  e.logprob = double(logits[size_t(token)]) - log_total;
  const size_t k = std::min(size_t(std::max(top, 0)), logits.size());
  if (k == 0) return e;
  std::vector<TokenId> ids(logits.size());
  std::iota(ids.begin(), ids.end(), TokenId(0));
  std::partial_sort(ids.begin(), ids.begin() + std::ptrdiff_t(k), ids.end(), [&](TokenId a, TokenId b) {
    return logits[size_t(a)] > logits[size_t(b)] || (logits[size_t(a)] == logits[size_t(b)] && a < b);
  });
  for (size_t i = 0; i < k; ++i) e.top.emplace_back(tok.piece(ids[i]), double(logits[size_t(ids[i])]) - log_total);
  return e;
}

}  // namespace recur::serve
