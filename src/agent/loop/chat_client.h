// A client for one OpenAI-compatible chat endpoint (POST .../chat/completions, GET .../models),
// over cpp-httplib (http and https). OpenAIProposer's transport; nothing here knows the agent.
// Every failure (no connection, a timeout, an HTTP error, a body that is not a chat
// completion) is a Status naming the URL and what came back. Not thread-safe: one request at
// a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace recur::agent {

// "http://host:port/v1" (a base: /chat/completions and /models are appended) or the full
// ".../chat/completions" URL; "http://host:port" alone means /v1.
struct ChatEndpoint {
  std::string origin;  // scheme://host[:port]
  std::string chat_path;
  std::string models_path;
};
Result<ChatEndpoint> parse_chat_url(std::string_view url);

struct ChatAnswer {
  std::string content;  // choices[0].message.content
  bool has_usage = false;
  int64_t prompt_tokens = 0, completion_tokens = 0;
  std::string body;  // the response as received
};

class ChatClient {
 public:
  // `api_key` non-empty: sent as "Authorization: Bearer KEY".
  static Result<std::unique_ptr<ChatClient>> connect(std::string_view url, std::string api_key);
  ~ChatClient();

  // POSTs one chat completion request and waits at most `timeout_s` for the answer.
  Result<ChatAnswer> complete(const nlohmann::json& request, double timeout_s);
  // The id of the endpoint's first model (GET .../models).
  Result<std::string> first_model(double timeout_s);
  const ChatEndpoint& endpoint() const;

 private:
  struct Impl;
  explicit ChatClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace recur::agent
