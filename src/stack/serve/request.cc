#include "serve/request.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "serve/unsupported_fields.h"

namespace recur::serve {
namespace {

using nlohmann::json;
using Parsed = expected<CompletionRequest, ApiError>;

const char* type_name(const json& v) { return v.type_name(); }

expected<json, ApiError> parse_object(std::string_view body) {
  json doc;
  try {
    doc = json::parse(body);
  } catch (const json::parse_error& e) {
    return unexpected(ApiError{400, fmt::format("the body is not valid JSON: byte {}: {}", e.byte, e.what()),
                               "invalid_request_error", "", "invalid_json"});
  } catch (const json::exception& e) {
    // A number too large for a double (out_of_range 406) is not a parse_error.
    return unexpected(ApiError{400, fmt::format("the body is not valid JSON: {}", e.what()), "invalid_request_error",
                               "", "invalid_json"});
  }
  if (!doc.is_object())
    return unexpected(schema_error("", "the body must be a JSON object, got {}", type_name(doc)));
  return doc;
}

// A present, non-null field, or nullptr.
const json* field(const json& obj, const char* name) {
  auto it = obj.find(name);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

expected<std::string, ApiError> required_string(const json& obj, const char* name) {
  const json* v = field(obj, name);
  if (!v) return unexpected(schema_error(name, "'{}' is required", name));
  if (!v->is_string()) return unexpected(schema_error(name, "'{}' must be a string, got {}", name, type_name(*v)));
  return v->get<std::string>();
}

expected<float, ApiError> number_in(const json& obj, const char* name, float fallback, double lo, double hi) {
  const json* v = field(obj, name);
  if (!v) return fallback;
  if (!v->is_number()) return unexpected(schema_error(name, "'{}' must be a number, got {}", name, type_name(*v)));
  double x = v->get<double>();
  if (!(x >= lo && x <= hi))
    return unexpected(bad_request(name, "out_of_range", "'{}' is {}; expected a number in [{}, {}]", name, x, lo, hi));
  return float(x);
}

expected<bool, ApiError> boolean(const json& obj, const char* name) {
  const json* v = field(obj, name);
  if (!v) return false;
  if (!v->is_boolean()) return unexpected(schema_error(name, "'{}' must be a boolean, got {}", name, type_name(*v)));
  return v->get<bool>();
}

expected<std::vector<std::string>, ApiError> parse_stop(const json& obj) {
  const json* v = field(obj, "stop");
  std::vector<std::string> out;
  if (!v) return out;
  if (v->is_string()) {
    out.push_back(v->get<std::string>());
  } else if (v->is_array()) {
    if (v->size() > kMaxStopSequences)
      return unexpected(bad_request("stop", "out_of_range", "'stop' has {} sequences; at most {} are allowed",
                                    v->size(), kMaxStopSequences));
    for (size_t i = 0; i < v->size(); ++i) {
      if (!(*v)[i].is_string())
        return unexpected(schema_error("stop", "'stop[{}]' must be a string, got {}", i, type_name((*v)[i])));
      out.push_back((*v)[i].get<std::string>());
    }
  } else {
    return unexpected(schema_error("stop", "'stop' must be a string or an array of strings, got {}", type_name(*v)));
  }
  for (const auto& s : out)
    if (s.empty() || s.size() > kMaxStopBytes)
      return unexpected(bad_request("stop", "out_of_range", "each stop sequence must be 1 to {} bytes, got {}",
                                    kMaxStopBytes, s.size()));
  return out;
}

expected<int, ApiError> top_count(const json& v, const char* name) {
  if (!v.is_number_integer()) return unexpected(schema_error(name, "'{}' must be an integer, got {}", name, type_name(v)));
  const int64_t n = v.get<int64_t>();
  if (n < 0 || n > kMaxTopLogprobs)
    return unexpected(bad_request(name, "out_of_range", "'{}' is {}; expected 0 to {}", name, n, kMaxTopLogprobs));
  return int(n);
}

// Chat: "logprobs": bool, "top_logprobs": 0..20 (only with logprobs true, as OpenAI requires).
expected<void, ApiError> parse_chat_logprobs(const json& doc, CompletionRequest& r) {
  auto wanted = boolean(doc, "logprobs");
  if (!wanted) return unexpected(wanted.error());
  const json* top = field(doc, "top_logprobs");
  if (top && !*wanted)
    return unexpected(bad_request("top_logprobs", "invalid_value", "'top_logprobs' needs 'logprobs': true"));
  if (!*wanted) return {};
  auto n = top ? top_count(*top, "top_logprobs") : expected<int, ApiError>(0);
  if (!n) return unexpected(n.error());
  r.sampling.logprobs = *n;
  return {};
}

// Completions (legacy): "logprobs": the number of alternatives, 0..20; "echo": bool.
expected<void, ApiError> parse_completion_logprobs(const json& doc, CompletionRequest& r) {
  if (const json* v = field(doc, "logprobs")) {
    auto n = top_count(*v, "logprobs");
    if (!n) return unexpected(n.error());
    r.sampling.logprobs = *n;
  }
  auto echo = boolean(doc, "echo");
  if (!echo) return unexpected(echo.error());
  r.echo = *echo;
  return {};
}

// The fields both endpoints share; `max_tokens_names` lists the accepted spellings.
expected<void, ApiError> parse_common(const json& doc, CompletionRequest& r) {
  auto model = required_string(doc, "model");
  if (!model) return unexpected(model.error());
  r.model = *model;
  for (const char* name : {"max_tokens", "max_completion_tokens"}) {
    const json* v = field(doc, name);
    if (!v) continue;
    if (!v->is_number_integer())
      return unexpected(schema_error(name, "'{}' must be an integer, got {}", name, type_name(*v)));
    int64_t n = v->get<int64_t>();
    if (n < 0 || n > kMaxTokensLimit)  // 0 only with echo: parse_completion_request checks it
      return unexpected(bad_request(name, "out_of_range", "'{}' is {}; expected 1 to {}", name, n, kMaxTokensLimit));
    r.sampling.max_tokens = int(n);
  }
  auto temperature = number_in(doc, "temperature", 1.0f, 0.0, 2.0);
  if (!temperature) return unexpected(temperature.error());
  r.sampling.temperature = *temperature;
  auto top_p = number_in(doc, "top_p", 1.0f, 0.0, 1.0);
  if (!top_p) return unexpected(top_p.error());
  if (*top_p <= 0.0f) return unexpected(bad_request("top_p", "out_of_range", "'top_p' must be greater than 0"));
  r.sampling.top_p = *top_p;
  if (const json* v = field(doc, "seed")) {
    if (!v->is_number_integer()) return unexpected(schema_error("seed", "'seed' must be an integer, got {}", type_name(*v)));
    r.sampling.seed = v->is_number_unsigned() ? v->get<uint64_t>() : uint64_t(v->get<int64_t>());
  }
  if (auto refused = refuse_unsupported_fields(doc, r.kind); !refused) return unexpected(refused.error());
  auto stop = parse_stop(doc);
  if (!stop) return unexpected(stop.error());
  r.sampling.stop = std::move(*stop);
  auto stream = boolean(doc, "stream");
  if (!stream) return unexpected(stream.error());
  r.stream = *stream;
  auto ignore_eos = boolean(doc, "ignore_eos");
  if (!ignore_eos) return unexpected(ignore_eos.error());
  r.sampling.ignore_eos = *ignore_eos;
  if (const json* v = field(doc, "timeout")) {
    if (!v->is_number()) return unexpected(schema_error("timeout", "'timeout' must be a number of seconds, got {}", type_name(*v)));
    const double t = v->get<double>();
    if (!(t > 0.0) || t > kMaxTimeoutSeconds)
      return unexpected(bad_request("timeout", "out_of_range", "'timeout' is {}; expected seconds above 0, at most {}", t,
                                    kMaxTimeoutSeconds));
    r.timeout_s = t;
  }
  if (const json* v = field(doc, "stream_options")) {
    if (!v->is_object())
      return unexpected(schema_error("stream_options", "'stream_options' must be an object, got {}", type_name(*v)));
    auto usage = boolean(*v, "include_usage");
    if (!usage) return unexpected(schema_error("stream_options.include_usage", "{}", usage.error().message));
    r.include_usage = *usage;
  }
  return {};
}

// prompt: a string, an array of token ids, or a batch of one of either.
expected<void, ApiError> parse_prompt(const json& doc, CompletionRequest& r) {
  const json* v = field(doc, "prompt");
  if (!v) return unexpected(schema_error("prompt", "'prompt' is required"));
  const json* p = v;
  if (v->is_array() && v->empty())
    return unexpected(bad_request("prompt", "empty", "'prompt' is an empty array; send a string or at least one token id"));
  if (v->is_array() && (v->front().is_string() || v->front().is_array())) {
    if (v->size() != 1)
      return unexpected(bad_request("prompt", "unsupported", "batched prompts ({} of them) are not supported; send one",
                                    v->size()));
    p = &v->front();
  }
  if (p->is_string()) {
    r.prompt = p->get<std::string>();
    return {};
  }
  if (!p->is_array())
    return unexpected(schema_error("prompt", "'prompt' must be a string or an array of token ids, got {}", type_name(*p)));
  if (p->empty())
    return unexpected(bad_request("prompt", "empty", "'prompt[0]' is an empty array; send at least one token id"));
  for (size_t i = 0; i < p->size(); ++i) {
    const json& id = (*p)[i];
    if (!id.is_number_integer())
      return unexpected(schema_error("prompt", "'prompt[{}]' must be a token id (integer), got {}", i, type_name(id)));
    r.prompt_ids.push_back(id.get<int64_t>());
  }
  r.prompt_ids_given = true;
  return {};
}

// An image part's URL: image_url as an object with a string url (chat API) or a string (Responses API).
expected<std::string, ApiError> image_part_url(const json& part, const std::string& where) {
  const json* v = field(part, "image_url");
  if (v && v->is_object()) v = field(*v, "url");
  if (!v || !v->is_string())
    return unexpected(schema_error(where + ".image_url", "'{}.image_url.url' must be a string (a data: URI)", where));
  return v->get<std::string>();
}

expected<std::string, ApiError> message_content(const json& content, size_t index, std::vector<ChatImage>& images) {
  const std::string param = fmt::format("messages[{}].content", index);
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array())
    return unexpected(schema_error(param, "'{}' must be a string or an array of parts, got {}", param, type_name(content)));
  std::string text;
  for (size_t k = 0; k < content.size(); ++k) {
    const json& part = content[k];
    std::string where = fmt::format("{}[{}]", param, k);
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      return unexpected(schema_error(where, "'{}' must be an object with a string 'type'", where));
    std::string type = part["type"].get<std::string>();
    if (type == "image_url" || type == "input_image") {
      auto url = image_part_url(part, where);
      if (!url) return unexpected(url.error());
      images.push_back({.offset = text.size(), .url = std::move(*url), .param = where});
      continue;
    }
    if (type != "text")
      return unexpected(bad_request(where, "unsupported", "'{}': part type '{}' is not supported (text and image_url are)", where, type));
    if (!part.contains("text") || !part["text"].is_string())
      return unexpected(schema_error(where + ".text", "'{}.text' must be a string", where));
    text += part["text"].get<std::string>();
  }
  return text;
}

expected<void, ApiError> parse_messages(const json& doc, CompletionRequest& r) {
  const json* v = field(doc, "messages");
  if (!v) return unexpected(schema_error("messages", "'messages' is required"));
  if (!v->is_array()) return unexpected(schema_error("messages", "'messages' must be an array, got {}", type_name(*v)));
  if (v->empty()) return unexpected(bad_request("messages", "empty", "'messages' must hold at least one message"));
  for (size_t i = 0; i < v->size(); ++i) {
    const json& m = (*v)[i];
    std::string where = fmt::format("messages[{}]", i);
    if (!m.is_object()) return unexpected(schema_error(where, "'{}' must be an object, got {}", where, type_name(m)));
    auto role = required_string(m, "role");
    if (!role) return unexpected(schema_error(where + ".role", "'{}.role' {}", where, "must be a string"));
    if (*role != "system" && *role != "user" && *role != "assistant" && *role != "developer" && *role != "tool")
      return unexpected(bad_request(where + ".role", "invalid_value",
                                    "'{}.role' is '{}'; expected system, developer, user, assistant or tool", where, *role));
    ChatMessage msg;
    msg.role = *role == "developer" ? "system" : *role == "tool" ? "user" : *role;
    const json* content = field(m, "content");
    if (!content) {
      if (*role != "assistant") return unexpected(schema_error(where + ".content", "'{}.content' is required", where));
    } else {
      auto text = message_content(*content, i, msg.images);
      if (!text) return unexpected(text.error());
      msg.content = std::move(*text);
    }
    r.messages.push_back(std::move(msg));
  }
  return {};
}

}  // namespace

Parsed parse_completion_request(std::string_view body) {
  auto doc = parse_object(body);
  if (!doc) return unexpected(doc.error());
  CompletionRequest r;
  r.kind = CompletionRequest::Kind::kCompletion;
  if (auto s = parse_common(*doc, r); !s) return unexpected(s.error());
  if (auto s = parse_completion_logprobs(*doc, r); !s) return unexpected(s.error());
  if (auto s = parse_prompt(*doc, r); !s) return unexpected(s.error());
  if (r.sampling.max_tokens == 0 && !r.echo)
    return unexpected(bad_request("max_tokens", "out_of_range",
                                  "'max_tokens' is 0; expected 1 to {} (0 only with 'echo': true, to score the prompt)",
                                  kMaxTokensLimit));
  return r;
}

Parsed parse_chat_request(std::string_view body) {
  auto doc = parse_object(body);
  if (!doc) return unexpected(doc.error());
  CompletionRequest r;
  r.kind = CompletionRequest::Kind::kChat;
  if (auto s = parse_common(*doc, r); !s) return unexpected(s.error());
  if (auto s = parse_chat_logprobs(*doc, r); !s) return unexpected(s.error());
  if (auto s = parse_messages(*doc, r); !s) return unexpected(s.error());
  if (r.sampling.max_tokens == 0)
    return unexpected(bad_request("max_tokens", "out_of_range", "'max_tokens' is 0; expected 1 to {}", kMaxTokensLimit));
  return r;
}

}  // namespace recur::serve
