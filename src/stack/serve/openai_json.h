// Response bodies in OpenAI's formats: whole responses, streaming chunks and the SSE framing
// (`data: {json}\n\n`, ending with `data: [DONE]\n\n`). Generated text can hold invalid UTF-8
// (a token may end mid-character); it is written with U+FFFD replacements, never an exception.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "serve/request.h"

namespace recur::serve {

struct ResponseMeta {
  CompletionRequest::Kind kind = CompletionRequest::Kind::kCompletion;
  std::string id;  // "cmpl-N" or "chatcmpl-N"
  int64_t created = 0;  // Unix seconds
  std::string model;
};

struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

nlohmann::json usage_json(const Usage& usage);
// The body of a non-streamed response; `logprobs` is the choice's (logprobs_json.h) or null.
nlohmann::json full_response(const ResponseMeta& meta, std::string_view text, std::string_view finish_reason,
                             const Usage& usage, const nlohmann::json& logprobs = nullptr);
// One streamed chunk. Chat chunks carry the role on the first one; the last chunk has a
// finish_reason and no text. With include_usage every chunk has "usage": null.
nlohmann::json stream_chunk(const ResponseMeta& meta, std::string_view text, bool first,
                            std::optional<std::string_view> finish_reason, bool include_usage,
                            const nlohmann::json& logprobs = nullptr);
// The extra chunk of stream_options.include_usage: no choices, the usage.
nlohmann::json usage_chunk(const ResponseMeta& meta, const Usage& usage);

// JSON text that never throws on invalid UTF-8.
std::string json_text(const nlohmann::json& j);
// "data: <json>\n\n"
std::string sse_event(const nlohmann::json& j);
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace recur::serve
