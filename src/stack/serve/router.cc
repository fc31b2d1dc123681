// `recur serve --role router` (role_workers.h): the OpenAI front end of disaggregated serving.
// Per request: reserve a receive slot on a decode worker, have a prefill worker send the
// prompt's state into it, then relay the decode worker's pieces (whole or as SSE). A chat's
// images are encoded while the request is prepared (the process's encoder, image_encoder.h) and
// their rows go to the prefill worker with the prompt. A worker that
// refuses connections is marked down (reported by /health and /metrics) and skipped by the
// round-robin until a probe or a later request finds it up. A request whose prefill worker dies
// is retried on the next prefill worker (503 when none is left); one whose decode worker dies
// before any text was relayed is retried once on each other decode worker; otherwise it fails
// with a 502 error JSON (an error event when streaming). Every request has a deadline
// (--request-timeout-s, or the request's "timeout": 408 request_timeout, as `--role all`), and
// while the decode worker streams, a watcher checks it and the client's connection every 100 ms,
// text or not (request_watch.h): a client that left, or a passed deadline, closes the decode
// worker's stream, which cancels the generation there (queued or running), and the request is
// counted "cancelled" or "timeout" (the worker stays up). During the prefill the watcher tells
// the prefill worker to cancel; it answers once its writes into the slot ended, and only then is
// the slot released.
// The router reaches its workers with the peer key (bearer_auth.h) and names each reservation's
// token in /decode and /kv/release.
#include <atomic>
#include <condition_variable>
#include <ctime>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include <fmt/format.h>
#include <httplib.h>

#include "core/clock.h"
#include "engine/gguf.h"
#include "engine/model.h"
#include "serve/bearer_auth.h"
#include "serve/kv_metrics.h"
#include "serve/openai_json.h"
#include "serve/prompt.h"
#include "serve/request_watch.h"
#include "serve/role_protocol.h"
#include "serve/role_workers.h"

namespace recur::serve {
namespace {

using nlohmann::json;

struct RouterWorker {
  std::string url;
  std::string role;
  std::atomic<bool> up{true};
};

// A worker's answer: the HTTP status and JSON body, or nothing when it could not be reached.
struct WorkerReply {
  int status = 0;
  json body;
};

// Why a worker could not be reached, in words (httplib's names are terse).
std::string router_unreachable_text(httplib::Error e) {
  switch (e) {
    case httplib::Error::Connection: return "refused the connection";
    case httplib::Error::ConnectionTimeout: return "did not accept the connection in time";
    case httplib::Error::Read: return "closed the connection before answering (died mid-request?)";
    case httplib::Error::Write: return "closed the connection while the request was sent";
    default: return httplib::to_string(e);
  }
}

// Runs a blocking call to a worker (router_post's `runner`: run_watched, below).
using CallRunner = std::function<void(const std::function<void()>& call)>;

// `failure`, when given, receives why the worker could not be reached (refused, reset mid-answer).
std::optional<WorkerReply> router_post(const RouterWorker& w, const std::string& peer_key, const std::string& path,
                                       const json& body, std::string* failure = nullptr,
                                       const CallRunner& runner = nullptr) {
  httplib::Client cli(w.url);
  cli.set_connection_timeout(2);
  cli.set_read_timeout(60);
  httplib::Result r{nullptr, httplib::Error::Unknown};
  auto call = [&] { r = cli.Post(path, {{"Authorization", "Bearer " + peer_key}}, json_text(body), "application/json"); };
  runner ? runner(call) : call();
  if (!r) {
    if (failure != nullptr) *failure = router_unreachable_text(r.error());
    return std::nullopt;
  }
  WorkerReply reply{r->status, json::parse(r->body, nullptr, false)};
  if (reply.body.is_discarded()) reply.body = json::object();
  return reply;
}

constexpr std::chrono::milliseconds kWatchInterval{100};

// Runs `call` (a blocking request to a worker) while a watcher thread checks `watch` every
// kWatchInterval, text or not. Once the client has left or the deadline passed, `give_up` runs at
// every interval until `call` returns (it makes the worker answer at once), and the reason is returned.
std::optional<ApiError> run_watched(const RequestWatch& watch, const std::function<void()>& call,
                                    const std::function<void()>& give_up) {
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::optional<ApiError> why;
  std::thread watcher([&] {
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, kWatchInterval, [&] { return done; })) {
      if (!why) why = watch.check();
      if (why) give_up();
    }
  });
  call();
  {
    std::lock_guard lock(mu);
    done = true;
  }
  cv.notify_one();
  watcher.join();
  return why;
}

// The router_requests_total outcome of a request that failed with `e`.
std::string router_outcome(const ApiError& e) {
  return is_client_closed(e) ? "cancelled" : e.code == "request_timeout" ? "timeout" : "error";
}

ApiError worker_error(const WorkerReply& r, std::string_view what) {
  std::string message = fmt::format("{} answered HTTP {}", what, r.status);
  if (r.body.contains("error") && r.body["error"].is_object())
    message += ": " + r.body["error"].value("message", std::string());
  const bool busy = r.status == 429;
  return {busy ? 429 : 502, message, busy ? "rate_limit_exceeded" : "server_error", "",
          busy ? "worker_busy" : "worker_failed"};
}

class Router {
 public:
  Router(const RoleOptions& o, std::unique_ptr<Model> model);
  void handle_generation(CompletionRequest::Kind kind, const httplib::Request& req, httplib::Response& res);
  void handle_health(httplib::Response& res);
  std::string metrics() const;
  const std::string& model_id() const { return model_id_; }
  const Model& model() const { return *model_; }

 private:
  struct Placement {
    RouterWorker* decode = nullptr;
    json reservation;
  };
  // Round-robin order starting at the next worker, those marked up first.
  std::vector<RouterWorker*> order(std::vector<std::unique_ptr<RouterWorker>>& pool, std::atomic<size_t>& next);
  expected<Placement, ApiError> reserve();
  expected<json, ApiError> prefill(const PreparedRequest& p, int64_t request, const Placement& at,
                                   const RequestWatch& watch);
  // Relays the decode worker's NDJSON lines to `on_line`; an error when it could not be reached
  // or closed the stream before its last line; `watch`'s reason when it gave the request up.
  expected<json, ApiError> decode(const PreparedRequest& p, int64_t request, const Placement& at,
                                  const std::function<bool(const json&)>& on_line, const RequestWatch& watch);
  bool reachable(RouterWorker& w);  // probes /health, updates w.up
  expected<json, ApiError> attempt(const PreparedRequest& p, const Placement& at,
                                   const std::function<bool(const json&)>& on_line, const RequestWatch& watch,
                                   bool& lost);
  expected<json, ApiError> generate(const PreparedRequest& p, Placement first,
                                    const std::function<bool(const json&)>& on_line, const RequestWatch& watch);
  void release(const Placement& at);
  void count(const std::string& outcome);

  RoleOptions options_;
  std::unique_ptr<Model> model_;
  std::string model_id_;
  std::vector<std::unique_ptr<RouterWorker>> prefill_, decode_;
  std::atomic<size_t> next_prefill_{0}, next_decode_{0};
  std::atomic<int64_t> next_request_{1};
  KvTransferMetrics kv_metrics_;
  mutable std::mutex mu_;
  std::map<std::string, uint64_t> outcomes_;
};

Router::Router(const RoleOptions& o, std::unique_ptr<Model> model) : options_(o), model_(std::move(model)) {
  model_id_ = o.serve.model_id.empty() ? std::filesystem::path(o.serve.model_path).stem().string() : o.serve.model_id;
  for (const auto& url : o.prefill_urls) {
    prefill_.push_back(std::make_unique<RouterWorker>());
    prefill_.back()->url = url;
    prefill_.back()->role = "prefill";
  }
  for (const auto& url : o.decode_urls) {
    decode_.push_back(std::make_unique<RouterWorker>());
    decode_.back()->url = url;
    decode_.back()->role = "decode";
  }
}

std::vector<RouterWorker*> Router::order(std::vector<std::unique_ptr<RouterWorker>>& pool, std::atomic<size_t>& next) {
  std::vector<RouterWorker*> up, down;
  const size_t start = next.fetch_add(1);
  for (size_t i = 0; i < pool.size(); ++i) {
    RouterWorker* w = pool[(start + i) % pool.size()].get();
    (w->up.load() ? up : down).push_back(w);
  }
  up.insert(up.end(), down.begin(), down.end());
  return up;
}

void Router::count(const std::string& outcome) {
  std::lock_guard lock(mu_);
  ++outcomes_[outcome];
}

expected<Router::Placement, ApiError> Router::reserve() {
  std::optional<ApiError> last;
  for (RouterWorker* w : order(decode_, next_decode_)) {
    auto r = router_post(*w, options_.serve.peer_key, "/kv/reserve", json::object());
    w->up.store(r.has_value());
    if (!r) continue;
    if (r->status == 200) return Placement{w, r->body};
    last = worker_error(*r, "decode worker " + w->url);
  }
  if (last) return unexpected(*last);
  return unexpected(ApiError{503, "no decode worker is reachable", "server_error", "", "no_decode_worker"});
}

expected<json, ApiError> Router::prefill(const PreparedRequest& p, int64_t request, const Placement& at,
                                         const RequestWatch& watch) {
  json msg = at.reservation;
  msg.erase("token");  // the reservation's: only the decode messages need it
  msg["request"] = request;
  msg["prompt_ids"] = p.prompt_ids;
  role_put_prompt_embeddings(msg, p);  // a chat's images, encoded by this process (image_encoder.h)
  // A prefill worker that refuses the connection or dies mid-prefill (nothing was relayed yet;
  // the next one rewrites the whole slot) is marked down and the next one is tried. When the
  // client leaves or the deadline passes meanwhile, the worker is told to cancel (POST
  // /prefill/cancel: it stops sending and answers once nothing is in flight, so the slot may
  // then be released) and the request ends with that reason.
  const json cancel = {{"tcp", at.reservation.at("tcp")}, {"generation", at.reservation.at("generation")}};
  std::string lost;
  bool first = true;
  for (RouterWorker* w : order(prefill_, next_prefill_)) {
    if (!first) count("prefill_retried");
    first = false;
    std::string failure;
    std::optional<ApiError> gave_up;
    auto r = router_post(*w, options_.serve.peer_key, "/prefill", msg, &failure, [&](const std::function<void()>& call) {
      bool told = false;
      gave_up = run_watched(watch, call, [&] {
        if (!std::exchange(told, true)) router_post(*w, options_.serve.peer_key, "/prefill/cancel", cancel);
      });
    });
    if (gave_up) return unexpected(*gave_up);
    w->up.store(r.has_value());
    if (!r) {
      lost += fmt::format("{}prefill worker {}: {}", lost.empty() ? "" : "; ", w->url, failure);
      continue;
    }
    if (r->status != 200) return unexpected(worker_error(*r, "prefill worker " + w->url));
    if (r->body.value("transport", std::string()) == "off")
      return unexpected(ApiError{503, "prefill worker " + w->url + " has serve.kv_transfer=off: nothing reaches "
                                      "a decode worker", "server_error", "", "kv_transfer_off"});
    kv_metrics_.observe(r->body.value("bytes", uint64_t(0)), r->body.value("transfer_seconds", 0.0));
    return r->body;
  }
  return unexpected(ApiError{503, "no prefill worker is reachable (" + lost + ")", "server_error", "",
                             "no_prefill_worker"});
}

expected<json, ApiError> Router::decode(const PreparedRequest& p, int64_t request, const Placement& at,
                                        const std::function<bool(const json&)>& on_line, const RequestWatch& watch) {
  const json msg = {{"request", request}, {"slot", at.reservation.at("slot")}, {"token", at.reservation.at("token")},
                    {"generation", at.reservation.at("generation")}, {"prompt_ids", p.prompt_ids},
                    {"max_tokens", p.options.max_new_tokens}, {"temperature", p.options.sampling.temperature},
                    {"top_p", p.options.sampling.top_p}, {"seed", p.options.sampling.seed},
                    {"stop_at_eos", p.options.stop_at_eos}, {"stop", p.stop}};
  httplib::Client cli(at.decode->url);
  cli.set_connection_timeout(2);
  cli.set_read_timeout(60);
  httplib::Request req;
  req.method = "POST";
  req.path = "/decode";
  req.body = json_text(msg);
  req.headers = {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + options_.serve.peer_key}};
  std::string pending, error_body;
  std::optional<json> last;
  int status = 0;
  bool client_left = false;  // on_line refused a piece: closing the stream cancels the generation
  req.response_handler = [&](const httplib::Response& r) {
    status = r.status;
    return true;
  };
  req.content_receiver = [&](const char* data, size_t n, uint64_t, uint64_t) {
    if (status != 200) {
      error_body.append(data, n);
      return true;
    }
    pending.append(data, n);
    for (size_t eol; (eol = pending.find('\n')) != std::string::npos;) {
      json line = json::parse(pending.substr(0, eol), nullptr, false);
      pending.erase(0, eol + 1);
      if (line.is_discarded()) continue;
      if (line.contains("text")) {
        if (!on_line(line)) {
          client_left = true;
          return false;
        }
      } else {
        last = line;
      }
    }
    return true;
  };
  httplib::Result result{nullptr, httplib::Error::Unknown};
  // Giving up closes the stream (again each interval: a stop before the connection exists does
  // nothing); the decode worker then cancels the job.
  const std::optional<ApiError> gave_up = run_watched(watch, [&] { result = cli.send(req); }, [&] { cli.stop(); });
  const bool finished = result && status == 200 && last && !last->contains("error");
  if (client_left) return unexpected(client_closed_error());  // not the worker's fault: it stays up
  if (gave_up && !finished) return unexpected(*gave_up);      // nor is a client that left, or a deadline
  if (!result || status == 0) {
    at.decode->up.store(false);
    return unexpected(ApiError{502, fmt::format("decode worker {} failed during the request: {}", at.decode->url,
                                                router_unreachable_text(result.error())),
                               "server_error", "", "decode_worker_lost"});
  }
  if (status != 200) {
    json body = json::parse(error_body, nullptr, false);
    return unexpected(worker_error({status, body.is_discarded() ? json::object() : body},
                                   "decode worker " + at.decode->url));
  }
  if (!last || last->contains("error"))
    return unexpected(ApiError{502, fmt::format("decode worker {} ended the stream without finishing{}",
                                                at.decode->url, last ? ": " + last->dump() : ""),
                               "server_error", "", "decode_worker_lost"});
  return *last;
}

bool Router::reachable(RouterWorker& w) {
  httplib::Client cli(w.url);
  cli.set_connection_timeout(1);
  cli.set_read_timeout(1);
  auto r = cli.Get("/health");
  w.up.store(r && r->status == 200);
  return w.up.load();
}

// Prefill into `at`, then decode. `lost`: the decode worker went away (during the transfer or
// the decode), so another one may take the request.
void Router::release(const Placement& at) {
  router_post(*at.decode, options_.serve.peer_key, "/kv/release",
              {{"slot", at.reservation.at("slot")}, {"token", at.reservation.at("token")}});
}

expected<json, ApiError> Router::attempt(const PreparedRequest& p, const Placement& at,
                                         const std::function<bool(const json&)>& on_line, const RequestWatch& watch,
                                         bool& lost) {
  const int64_t request = next_request_.fetch_add(1);
  auto pre = prefill(p, request, at, watch);
  if (!pre) {
    lost = !reachable(*at.decode);
    if (!lost) release(at);
    if (lost)  // the transfer failed because its target went away: say so
      return unexpected(ApiError{502, fmt::format("decode worker {} was lost during the transfer ({})",
                                                  at.decode->url, pre.error().message),
                                 "server_error", "", "decode_worker_lost"});
    return unexpected(pre.error());
  }
  if (auto why = watch.check()) {  // the client left, or the deadline passed, as the prefill ended
    release(at);
    return unexpected(std::move(*why));
  }
  auto done = decode(p, request, at, on_line, watch);
  lost = !done && !at.decode->up.load();
  return done;
}

// Tries `first`, then (when its decode worker was lost before any text was relayed) each other
// decode worker that answers a reservation, once.
expected<json, ApiError> Router::generate(const PreparedRequest& p, Placement first,
                                          const std::function<bool(const json&)>& on_line, const RequestWatch& watch) {
  bool relayed = false;
  auto relay = [&](const json& line) {
    relayed = true;
    return on_line(line);
  };
  Placement at = std::move(first);
  for (size_t tries = 1;; ++tries) {
    bool lost = false;
    auto done = attempt(p, at, relay, watch, lost);
    if (done || !lost || relayed || tries >= decode_.size()) return done;
    auto next = reserve();
    if (!next || next->decode == at.decode) return done;
    count("retried");
    at = std::move(*next);
  }
}

void Router::handle_generation(CompletionRequest::Kind kind, const httplib::Request& req, httplib::Response& res) {
  const int64_t arrival = now_ns();
  auto parsed = kind == CompletionRequest::Kind::kChat ? parse_chat_request(req.body) : parse_completion_request(req.body);
  if (!parsed) return role_send_error(res, parsed.error());
  const RequestDeadline deadline = request_deadline(arrival, options_.serve.request_timeout_s, parsed->timeout_s);
  // The decode worker samples from logits the router never sees, and the prompt's are the prefill worker's.
  for (const auto& [asked, field] : {std::pair{parsed->sampling.logprobs.has_value(), "logprobs"}, {parsed->echo, "echo"}})
    if (asked)
      return role_send_error(res, bad_request(field, "unsupported", "'{}' is not supported by the disaggregated roles; "
                                              "send it to a single-process `recur serve`", field));
  auto prepared = prepare_request(*parsed, model_id_, *model_);
  if (!prepared) return role_send_error(res, prepared.error());
  auto p = std::make_shared<PreparedRequest>(std::move(*prepared));
  auto placed = reserve();  // before any answer, so that overload is a 429 for streams too
  if (!placed) {
    count("error");
    return role_send_error(res, placed.error());
  }
  const bool chat = kind == CompletionRequest::Kind::kChat;
  ResponseMeta meta{kind, fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", next_request_.load()),
                    int64_t(std::time(nullptr)), model_id_};
  const int prompt_tokens = int(p->prompt_ids.size());
  if (!parsed->stream) {
    std::string text;
    auto done = generate(*p, std::move(*placed), [&](const json& line) {
      text += line.at("text").get<std::string>();
      return !http_client_gone();  // a client that left: closing the decode stream cancels there
    }, RequestWatch{http_client_fd(), deadline});
    if (!done) {
      count(router_outcome(done.error()));
      return role_send_error(res, done.error());
    }
    count("ok");
    return role_send_json(res, full_response(meta, text, done->value("finish_reason", "length"),
                                             {prompt_tokens, done->value("completion_tokens", 0)}));
  }
  const bool usage = parsed->include_usage;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider("text/event-stream", [this, p, at = *placed, meta, usage, prompt_tokens,
                                                         deadline](size_t, httplib::DataSink& sink) {
    bool first = true;
    auto write = [&](const json& j) {
      const std::string e = sse_event(j);
      return sink.write(e.data(), e.size());
    };
    if (meta.kind == CompletionRequest::Kind::kChat) first = !write(stream_chunk(meta, "", true, std::nullopt, usage));
    auto done = generate(*p, at, [&](const json& line) {
      const bool ok = write(stream_chunk(meta, line.at("text").get<std::string>(), first, std::nullopt, usage));
      first = false;
      return ok;
    }, RequestWatch{http_client_fd(), deadline});
    if (!done) {
      count(router_outcome(done.error()));
      write(done.error().to_json());
    } else {
      count("ok");
      write(stream_chunk(meta, "", first, done->value("finish_reason", "length"), usage));
      if (usage) write(usage_chunk(meta, {prompt_tokens, done->value("completion_tokens", 0)}));
    }
    sink.write(kSseDone.data(), kSseDone.size());
    sink.done();
    return true;
  });
}

void Router::handle_health(httplib::Response& res) {
  json report = {{"role", "router"}};
  bool serving = true;
  for (auto* pool : {&prefill_, &decode_}) {
    bool any = false;
    json list = json::array();
    for (auto& w : *pool) {
      any = reachable(*w) || any;
      list.push_back({{"url", w->url}, {"up", w->up.load()}});
    }
    report[pool == &prefill_ ? "prefill" : "decode"] = list;
    serving = serving && any;
  }
  bool all = true;
  for (auto* pool : {&prefill_, &decode_})
    for (auto& w : *pool) all = all && w->up.load();
  report["status"] = all ? "ok" : serving ? "degraded" : "unavailable";
  res.status = serving ? 200 : 503;
  role_send_json(res, report);
}

std::string Router::metrics() const {
  std::string out = "# HELP recur_router_worker_up whether the router last found the worker reachable\n"
                    "# TYPE recur_router_worker_up gauge\n";
  for (const auto* pool : {&prefill_, &decode_})
    for (const auto& w : *pool)
      out += fmt::format("recur_router_worker_up{{role=\"{}\",url=\"{}\"}} {}\n", w->role, w->url, w->up.load() ? 1 : 0);
  out += "# HELP recur_router_requests_total generation requests by outcome\n# TYPE recur_router_requests_total counter\n";
  {
    std::lock_guard lock(mu_);
    for (const auto& [outcome, n] : outcomes_) out += fmt::format("recur_router_requests_total{{outcome=\"{}\"}} {}\n", outcome, n);
  }
  kv_metrics_.render(out);
  return out;
}

}  // namespace

Status run_router(const RoleOptions& options) {
  block_stop_signals();
  if (options.prefill_urls.empty() || options.decode_urls.empty())
    return invalid_argument("--role router needs --prefill URL[,URL...] and --decode URL[,URL...]");
  RECUR_RETURN_IF_ERROR(role_check_peer_key(options.serve, "router"));
  // The router only tokenizes: it maps the file rather than copying the weights (engine.weights_memory).
  RECUR_ASSIGN_OR_RETURN(gguf::File file, read_model_file(options.serve.model_path, FileMemory::kMap));
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, model_from_file(std::move(file), {.regroup_q8_0 = false, .regroup_f16 = false}));
  Router router(options, std::move(model));
  HttpFront svr;
  svr.set_payload_max_length(options.serve.max_body_bytes);
  require_bearer_key(svr, options.serve.api_key);
  svr.Get("/health", [&router](const httplib::Request&, httplib::Response& res) { router.handle_health(res); });
  svr.Get("/metrics", [&router](const httplib::Request&, httplib::Response& res) {
    res.set_content(router.metrics(), "text/plain; version=0.0.4");
  });
  svr.Get("/v1/models", [&router](const httplib::Request&, httplib::Response& res) {
    json model = {{"id", router.model_id()}, {"object", "model"}, {"created", 0}, {"owned_by", "recur"},
                  {"max_model_len", router.model().config().context}};
    role_send_json(res, {{"object", "list"}, {"data", json::array({model})}});
  });
  svr.Post("/v1/completions", [&router](const httplib::Request& req, httplib::Response& res) {
    router.handle_generation(CompletionRequest::Kind::kCompletion, req, res);
  });
  svr.Post("/v1/chat/completions", [&router](const httplib::Request& req, httplib::Response& res) {
    router.handle_generation(CompletionRequest::Kind::kChat, req, res);
  });
  return serve_until_signal(svr, options.serve, front_options(options.serve),
                                 fmt::format("router over {} prefill and {} decode workers",
                                             options.prefill_urls.size(), options.decode_urls.size()));
}

}  // namespace recur::serve
