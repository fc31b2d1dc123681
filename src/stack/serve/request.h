// The bodies of POST /v1/completions and /v1/chat/completions, parsed and checked against the
// schema without a model: JSON syntax, field types, required fields, value ranges that do not
// depend on the model. Checks that need the model (its name, context, vocabulary) are in
// prompt.h. Fields of OpenAI's API that recur does not implement (tools, response_format other
// than text, n > 1, penalties, ...: unsupported_fields.h) are refused with a 400 naming the field;
// other unknown fields are ignored, as OpenAI's server does for forward compatibility.
//
// Errors: malformed JSON 400 (code "invalid_json", with the byte offset); a missing field or a
// wrong type 422; a value out of range or a feature not built 400. Pure functions, thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/expected.h"
#include "serve/api_error.h"

namespace recur::serve {

inline constexpr size_t kMaxStopSequences = 4;
inline constexpr size_t kMaxStopBytes = 256;
inline constexpr double kMaxTimeoutSeconds = 86400;
inline constexpr int64_t kMaxTokensLimit = int64_t(1) << 24;
inline constexpr int kMaxTopLogprobs = 20;

// An image part of a chat message (OpenAI's {"type":"image_url","image_url":{"url":...}}):
// decoded and encoded later (image_prompt.h), where the model is known.
struct ChatImage {
  size_t offset = 0;  // where in the message's content it sits (bytes of text before it)
  std::string url;    // a data: URI
  std::string param;  // "messages[0].content[1]", for errors
};

struct ChatMessage {
  std::string role;     // system, user, assistant (tool and developer are read as user/system)
  std::string content;  // the text parts joined
  std::vector<ChatImage> images;
};

struct SamplingRequest {
  std::optional<int> max_tokens;  // absent: the endpoint's default (prompt.h)
  float temperature = 1.0f;       // OpenAI's default; 0 = greedy
  float top_p = 1.0f;
  uint64_t seed = 0;
  std::vector<std::string> stop;
  bool ignore_eos = false;  // vLLM's extension: generate exactly max_tokens (load generators)
  // Present: return each generated token's logprob and this many most likely alternatives (chat:
  // logprobs true + top_logprobs; completions: the integer logprobs).
  std::optional<int> logprobs;
};

struct CompletionRequest {
  enum class Kind { kCompletion, kChat };
  Kind kind = Kind::kCompletion;
  std::string model;
  // kCompletion: a text prompt, or token ids when prompt_ids_given.
  std::string prompt;
  std::vector<int64_t> prompt_ids;
  bool prompt_ids_given = false;
  bool echo = false;  // the answer's text starts with the prompt (with logprobs: the prompt's too)
  // kChat:
  std::vector<ChatMessage> messages;
  SamplingRequest sampling;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  std::optional<double> timeout_s;  // "timeout": lowers the server's --request-timeout-s for this request
};

expected<CompletionRequest, ApiError> parse_completion_request(std::string_view body);
expected<CompletionRequest, ApiError> parse_chat_request(std::string_view body);

}  // namespace recur::serve
