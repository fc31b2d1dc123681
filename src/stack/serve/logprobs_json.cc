#include "serve/logprobs_json.h"

namespace recur::serve {
namespace {

using nlohmann::json;

json bytes_of(const std::string& text) {
  json bytes = json::array();
  for (unsigned char c : text) bytes.push_back(int(c));
  return bytes;
}

json chat_entry(const TokenLogprob& e) {
  json top = json::array();
  for (const auto& [token, logprob] : e.top)
    top.push_back({{"token", token}, {"logprob", logprob}, {"bytes", bytes_of(token)}});
  return {{"token", e.token}, {"logprob", e.logprob ? json(*e.logprob) : json(nullptr)}, {"bytes", bytes_of(e.token)},
          {"top_logprobs", top}};
}

}  // namespace

json LogprobsJson::render(std::span<const TokenLogprob> entries) {
  if (kind_ == CompletionRequest::Kind::kChat) {
    json content = json::array();
    for (const auto& e : entries) content.push_back(chat_entry(e));
    return {{"content", content}, {"refusal", nullptr}};
  }
  json tokens = json::array(), logprobs = json::array(), top = json::array(), offsets = json::array();
  for (const auto& e : entries) {
    tokens.push_back(e.token);
    logprobs.push_back(e.logprob ? json(*e.logprob) : json(nullptr));
    if (e.logprob) {
      // OpenAI's legacy dictionary holds the sampled token too: up to logprobs + 1 entries.
      json alternatives = json::object();
      for (const auto& [token, logprob] : e.top) alternatives[token] = logprob;
      alternatives[e.token] = *e.logprob;
      top.push_back(alternatives);
    } else {
      top.push_back(nullptr);
    }
    offsets.push_back(offset_);
    offset_ += e.token.size();
  }
  return {{"tokens", tokens}, {"token_logprobs", logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

}  // namespace recur::serve
