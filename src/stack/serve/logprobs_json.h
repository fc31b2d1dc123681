// Token logprobs in OpenAI's two formats. Chat: choices[].logprobs = {"content": [{token, logprob,
// bytes, top_logprobs: [{token, logprob, bytes}]}], "refusal": null}. Completions (legacy):
// {tokens, token_logprobs, top_logprobs: [{token: logprob}], text_offset}, where an echoed
// prompt's first token has null logprob and null top_logprobs (nothing precedes it).
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "serve/request.h"

namespace recur::serve {

struct TokenLogprob {
  std::string token;              // the token's text (its bytes: may end mid-character)
  std::optional<double> logprob;  // null: the first prompt token, which nothing predicts
  std::vector<std::pair<std::string, double>> top;  // the most likely tokens, most likely first
};

// Renders entries for one response or one streamed chunk; the legacy format's text_offset runs
// on across calls (a stream's offsets count from the start of the whole text).
class LogprobsJson {
 public:
  explicit LogprobsJson(CompletionRequest::Kind kind) : kind_(kind) {}
  nlohmann::json render(std::span<const TokenLogprob> entries);

 private:
  CompletionRequest::Kind kind_;
  size_t offset_ = 0;
};

}  // namespace recur::serve
