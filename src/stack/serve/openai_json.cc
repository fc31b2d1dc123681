#include "serve/openai_json.h"

namespace recur::serve {
namespace {

using nlohmann::json;

bool is_chat(const ResponseMeta& meta) { return meta.kind == CompletionRequest::Kind::kChat; }

json header(const ResponseMeta& meta, const char* object) {
  return {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

}  // namespace

json usage_json(const Usage& usage) {
  return {{"prompt_tokens", usage.prompt_tokens}, {"completion_tokens", usage.completion_tokens},
          {"total_tokens", usage.prompt_tokens + usage.completion_tokens}};
}

json full_response(const ResponseMeta& meta, std::string_view text, std::string_view finish_reason, const Usage& usage,
                   const json& logprobs) {
  json choice = {{"index", 0}, {"logprobs", logprobs}, {"finish_reason", finish_reason}};
  if (is_chat(meta))
    choice["message"] = {{"role", "assistant"}, {"content", text}};
  else
    choice["text"] = text;
  json j = header(meta, is_chat(meta) ? "chat.completion" : "text_completion");
  j["choices"] = json::array({choice});
  j["usage"] = usage_json(usage);
  return j;
}

json stream_chunk(const ResponseMeta& meta, std::string_view text, bool first,
                  std::optional<std::string_view> finish_reason, bool include_usage, const json& logprobs) {
  json choice = {{"index", 0}, {"logprobs", logprobs},
                 {"finish_reason", finish_reason ? json(*finish_reason) : json(nullptr)}};
  if (is_chat(meta)) {
    json delta = json::object();
    if (first) delta["role"] = "assistant";
    if (!finish_reason) delta["content"] = text;
    choice["delta"] = delta;
  } else {
    choice["text"] = text;
  }
  json j = header(meta, is_chat(meta) ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array({choice});
  if (include_usage) j["usage"] = nullptr;
  return j;
}

json usage_chunk(const ResponseMeta& meta, const Usage& usage) {
  json j = header(meta, is_chat(meta) ? "chat.completion.chunk" : "text_completion");
  j["choices"] = json::array();
  j["usage"] = usage_json(usage);
  return j;
}

std::string json_text(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

std::string sse_event(const json& j) { return "data: " + json_text(j) + "\n\n"; }

}  // namespace recur::serve
