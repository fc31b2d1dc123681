// The third translation unit that includes httplib.h (beside src/serve's server and loadgen).
#include "loop/chat_client.h"

#include <algorithm>
#include <chrono>

#include <httplib.h>

#include "loop/proposer_protocol.h"

namespace recur::agent {

namespace {

using nlohmann::json;

// An OpenAI error body's message, else the start of the body.
std::string error_text(const std::string& body) {
  json j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error") && j["error"].is_object() &&
      j["error"].contains("message") && j["error"]["message"].is_string())
    return excerpt(j["error"]["message"].get<std::string>());
  return excerpt(body);
}

std::chrono::milliseconds millis(double s) {
  return std::chrono::milliseconds(std::max<int64_t>(1, int64_t(s * 1000)));
}

}  // namespace

Result<ChatEndpoint> parse_chat_url(std::string_view url) {
  const size_t scheme_end = url.find("://");
  const std::string_view scheme = scheme_end == std::string_view::npos ? "" : url.substr(0, scheme_end);
  if (scheme != "http" && scheme != "https")
    return invalid_argument("openai:{}: expected an http:// or https:// URL such as http://127.0.0.1:8000/v1", url);
  const size_t path_start = url.find('/', scheme_end + 3);
  ChatEndpoint e;
  e.origin = std::string(url.substr(0, path_start));
  if (e.origin.size() == scheme_end + 3) return invalid_argument("openai:{}: the URL has no host", url);
  std::string path = path_start == std::string_view::npos ? "" : std::string(url.substr(path_start));
  if (path.find_first_of("?#") != std::string::npos)
    return invalid_argument("openai:{}: a query or fragment is not supported (options are --proposer-* flags)", url);
  while (!path.empty() && path.back() == '/') path.pop_back();
  if (path.empty()) path = "/v1";
  constexpr std::string_view kChat = "/chat/completions";
  if (path.ends_with(kChat)) {
    e.chat_path = path;
    path.resize(path.size() - kChat.size());
  } else {
    e.chat_path = path + std::string(kChat);
  }
  e.models_path = path + "/models";
  return e;
}

struct ChatClient::Impl {
  Impl(ChatEndpoint e, std::string key) : endpoint(std::move(e)), client(endpoint.origin) {
    client.set_keep_alive(true);
    client.set_tcp_nodelay(true);
    if (!key.empty()) headers.emplace("Authorization", "Bearer " + key);
  }

  void set_timeout(double s) {
    client.set_connection_timeout(millis(std::min(s, 10.0)));
    client.set_read_timeout(millis(s));
    client.set_write_timeout(millis(s));
  }

  ChatEndpoint endpoint;
  httplib::Client client;
  httplib::Headers headers;
};

ChatClient::ChatClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ChatClient::~ChatClient() = default;

Result<std::unique_ptr<ChatClient>> ChatClient::connect(std::string_view url, std::string api_key) {
  RECUR_ASSIGN_OR_RETURN(ChatEndpoint e, parse_chat_url(url));
  return std::unique_ptr<ChatClient>(new ChatClient(std::make_unique<Impl>(std::move(e), std::move(api_key))));
}

const ChatEndpoint& ChatClient::endpoint() const { return impl_->endpoint; }

Result<ChatAnswer> ChatClient::complete(const json& request, double timeout_s) {
  const std::string url = impl_->endpoint.origin + impl_->endpoint.chat_path;
  impl_->set_timeout(timeout_s);
  auto res = impl_->client.Post(impl_->endpoint.chat_path, impl_->headers, request.dump(), "application/json");
  if (!res) return io_error("POST {}: {}", url, httplib::to_string(res.error()));
  if (res->status != 200) return io_error("POST {}: HTTP {}: {}", url, res->status, error_text(res->body));
  ChatAnswer a;
  a.body = res->body;
  json j = json::parse(res->body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("choices") || !j["choices"].is_array() ||
      j["choices"].empty() || !j["choices"][0].is_object() || !j["choices"][0].contains("message") ||
      !j["choices"][0]["message"].is_object())
    return parse_error("POST {}: expected a chat completion {{\"choices\": [{{\"message\": ...}}]}}, got '{}'", url,
                       excerpt(res->body));
  const json& content = j["choices"][0]["message"].value("content", json());
  a.content = content.is_string() ? content.get<std::string>() : "";
  if (j.contains("usage") && j["usage"].is_object()) {
    const json& u = j["usage"];
    if (u.contains("prompt_tokens") && u["prompt_tokens"].is_number_integer() && u.contains("completion_tokens") &&
        u["completion_tokens"].is_number_integer()) {
      a.has_usage = true;
      a.prompt_tokens = u["prompt_tokens"].get<int64_t>();
      a.completion_tokens = u["completion_tokens"].get<int64_t>();
    }
  }
  return a;
}

Result<std::string> ChatClient::first_model(double timeout_s) {
  const std::string url = impl_->endpoint.origin + impl_->endpoint.models_path;
  impl_->set_timeout(timeout_s);
  auto res = impl_->client.Get(impl_->endpoint.models_path, impl_->headers);
  if (!res) return io_error("GET {}: {}", url, httplib::to_string(res.error()));
  if (res->status != 200) return io_error("GET {}: HTTP {}: {}", url, res->status, error_text(res->body));
  json j = json::parse(res->body, nullptr, false);
  if (j.is_discarded() || !j.is_object() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
      !j["data"][0].is_object() || !j["data"][0].contains("id") || !j["data"][0]["id"].is_string())
    return parse_error("GET {}: expected {{\"data\": [{{\"id\": ...}}]}} (or name the model: --proposer-model), got '{}'",
                       url, excerpt(res->body));
  return j["data"][0]["id"].get<std::string>();
}

}  // namespace recur::agent
