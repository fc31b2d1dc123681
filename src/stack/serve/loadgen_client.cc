// The other translation unit that includes httplib.h (the server's is http_server.cc).
#include "serve/loadgen_client.h"

#include <chrono>

#include <httplib.h>
#include <nlohmann/json.hpp>

namespace recur::serve {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Reads SSE events as they arrive and times the chunks that carry text.
class SseTimer {
 public:
  SseTimer(RequestSample& sample, Clock::time_point t0) : sample_(sample), t0_(t0), last_(t0) {}

  bool feed(const char* data, size_t n) {
    buffer_.append(data, n);
    size_t end;
    while ((end = buffer_.find("\n\n")) != std::string::npos) {
      std::string event = buffer_.substr(0, end);
      buffer_.erase(0, end + 2);
      if (event.rfind("data: ", 0) != 0) continue;
      std::string_view payload = std::string_view(event).substr(6);
      if (payload == "[DONE]") continue;
      json j = json::parse(payload, nullptr, false);
      if (j.is_discarded() || !j.is_object()) continue;
      if (j.contains("usage") && j["usage"].is_object()) sample_.output_tokens = j["usage"].value("completion_tokens", 0);
      if (!j.contains("choices") || !j["choices"].is_array() || j["choices"].empty()) continue;
      const json& c = j["choices"][0];
      std::string text = c.contains("text") && c["text"].is_string() ? c["text"].get<std::string>()
                         : c.contains("delta") && c["delta"].is_object() ? c["delta"].value("content", "")
                                                                          : "";
      if (text.empty()) continue;
      Clock::time_point now = Clock::now();
      if (sample_.ttft_s < 0)
        sample_.ttft_s = std::chrono::duration<double>(now - t0_).count();
      else
        sample_.itl_s.push_back(std::chrono::duration<double>(now - last_).count());
      last_ = now;
    }
    return true;
  }

 private:
  RequestSample& sample_;
  Clock::time_point t0_, last_;
  std::string buffer_;
};

class HttplibLoadgenClient : public LoadgenClient {
 public:
  HttplibLoadgenClient(const std::string& url, const std::string& api_key) : client_(url) {
    // A connection per request: llama-server (cpp-httplib) may close a kept-alive connection
    // just after a streamed response, and the next request sent on it got no response at all
    // (status 0 for 1 in 4-6 requests against llama.cpp c392e50).
    client_.set_keep_alive(false);
    client_.set_tcp_nodelay(true);
    client_.set_read_timeout(600);
    if (!api_key.empty()) headers_.emplace("Authorization", "Bearer " + api_key);
  }

  Result<std::string> first_model() override {
    auto res = client_.Get("/v1/models", headers_);
    if (!res) return io_error("GET /v1/models: {}", httplib::to_string(res.error()));
    if (res->status != 200) return io_error("GET /v1/models: HTTP {}: {}", res->status, res->body);
    json j = json::parse(res->body, nullptr, false);
    if (j.is_discarded() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
        !j["data"][0].contains("id") || !j["data"][0]["id"].is_string())
      return parse_error("GET /v1/models: expected {{\"data\": [{{\"id\": ...}}]}}, got {}", res->body.substr(0, 200));
    return j["data"][0]["id"].get<std::string>();
  }

  RequestSample complete(const std::string& body, bool stream) override {
    RequestSample sample;
    const Clock::time_point t0 = Clock::now();
    httplib::Request req;
    req.method = "POST";
    req.path = "/v1/completions";
    req.headers = headers_;
    req.set_header("Content-Type", "application/json");
    req.body = body;
    SseTimer timer(sample, t0);
    std::string whole;
    req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
      return stream ? timer.feed(data, n) : (whole.append(data, n), true);
    };
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    bool sent = client_.send(req, res, error);
    sample.latency_s = seconds_since(t0);
    if (!sent) return sample;  // status 0: no response
    sample.status = res.status;
    if (!stream && res.status == 200) {
      json j = json::parse(whole, nullptr, false);
      if (!j.is_discarded() && j.contains("usage") && j["usage"].is_object())
        sample.output_tokens = j["usage"].value("completion_tokens", 0);
    }
    return sample;
  }

 private:
  httplib::Client client_;
  httplib::Headers headers_;
};

}  // namespace

Result<std::unique_ptr<LoadgenClient>> LoadgenClient::connect(const std::string& url, const std::string& api_key) {
  if (url.rfind("http://", 0) != 0)
    return invalid_argument("--url {}: expected http://HOST:PORT (https is not supported)", url);
  std::string base = url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  if (base.size() > 3 && base.substr(base.size() - 3) == "/v1") base.resize(base.size() - 3);
  return std::unique_ptr<LoadgenClient>(new HttplibLoadgenClient(base, api_key));
}

}  // namespace recur::serve
