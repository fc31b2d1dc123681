// OpenAIProposer (`--proposer openai:URL`): an LLM behind any OpenAI-compatible chat endpoint
// proposes the changes. Per proposal it POSTs one chat completion (temperature 0, a bounded
// max_tokens): a system prompt that states the action protocol, and the compact state
// (proposer_protocol.h: configuration, gate, evidence, `next`, the last Feedback, `rejected`,
// the relevant knobs) as the user message. The first JSON object of the answer is validated
// exactly like the command proposer's (parse_action); prose, no JSON, an invalid action, a
// connection or HTTP error are refusals with the reason, which the loop feeds back.
// Limits (ProposerLimits: calls, tokens, seconds) end the run through stop_reason().
// The API key comes from RECUR_PROPOSER_API_KEY, else OPENAI_API_KEY. Not thread-safe.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "loop/chat_client.h"
#include "loop/proposer.h"

namespace recur::agent {

// The system prompt: what the agent is, the state's fields and the answer's form.
extern const std::string_view kOpenAIProposerSystemPrompt;

class OpenAIProposer : public Proposer {
 public:
  static Result<std::unique_ptr<OpenAIProposer>> create(std::string_view url, const ProposerOptions& options);

  std::string name() const override { return "openai:" + url_; }
  Result<std::optional<Proposal>> propose(const AgentState& state) override;
  std::string stop_reason() const override { return stop_reason_; }

  int calls() const { return calls_; }
  int64_t tokens() const { return tokens_; }

 private:
  OpenAIProposer(std::string url, std::unique_ptr<ChatClient> client, ProposerOptions options);
  std::string limit_reached() const;  // "" while every limit has room
  double seconds_left() const;
  void log_exchange(const nlohmann::json& request, const Result<ChatAnswer>& answer, double seconds) const;

  std::string url_;
  std::unique_ptr<ChatClient> client_;
  ProposerOptions options_;
  std::string model_;
  int calls_ = 0;
  int64_t tokens_ = 0;
  double waited_s_ = 0;
  std::string stop_reason_;
};

}  // namespace recur::agent
