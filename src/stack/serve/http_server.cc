// The one translation unit of the server that includes httplib.h: routes, authentication,
// errors, streaming and the process lifetime (run_server).
#include <sys/socket.h>

#include <csignal>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <utility>
#include <thread>

#include <fmt/format.h>
#include <httplib.h>

#include "core/clock.h"
#include "engine/model.h"
#include "serve/bearer_auth.h"
#include "serve/engine_workers.h"
#include "serve/job_output.h"
#include "serve/live_jobs.h"
#include "serve/logprobs_json.h"
#include "serve/openai_json.h"
#include "serve/request_watch.h"
#include "serve/serve.h"
#include "serve/serve_loop.h"

namespace recur::serve {
namespace {

using nlohmann::json;

struct ServerState {
  const ServeOptions& options;
  const Model& model;
  std::string model_id;
  JobQueue queue;
  Metrics metrics;
  LiveJobs live;
  std::atomic<uint64_t> next_id{1};
  std::atomic<bool> stopping{false};
  bool batching = false;  // the workers run batching schedulers (logprobs need their logits)
};

// What a response adds to the generated text: the echoed prompt (completions' echo) and the
// tokens' logprobs.
struct ResponseExtras {
  std::string echo;
  bool logprobs = false;
};

constexpr int kServeListenBacklog = 1024;

const ApiError kShuttingDown{503, "the server is shutting down", "server_error", "", "shutting_down"};

void send_error(httplib::Response& res, const ApiError& error) {
  res.status = error.http_status;
  res.set_content(error.body(), "application/json");
}

// Metric labels come from this fixed set, so arbitrary request paths cannot grow the page.
std::string route_label(const std::string& path) {
  for (const char* known : {"/health", "/metrics", "/v1/models", "/v1/completions", "/v1/chat/completions"})
    if (path == known) return known;
  return "other";
}

std::string stream_error_event(const ApiError& error) { return sse_event(error.to_json()); }

constexpr std::chrono::milliseconds kClientCheckInterval{100};

// The job's next update; or, when its client closed the connection or its deadline passed, the
// job cancelled and why.
expected<Job::Update, ApiError> next_update(ServerState& s, const std::shared_ptr<Job>& job,
                                            const RequestDeadline& deadline) {
  auto u = job->wait_update_for(kClientCheckInterval);
  if (u && u->result) return std::move(*u);  // finished: nothing left to cancel
  // Checked at every update too (text arrives every step while a generation runs): one poll().
  if (auto why = RequestWatch{http_client_fd(), deadline}.check()) {
    cancel_job(job, s.queue, s.metrics);
    return unexpected(std::move(*why));
  }
  return u ? std::move(*u) : Job::Update{};
}

// Streams the job's text as SSE chunks; a failed write means the client left: cancel the job. A
// passed deadline ends the stream with an error event (code request_timeout), then [DONE].
void stream_job(ServerState& s, std::shared_ptr<Job> job, ResponseMeta meta, bool include_usage,
                RequestDeadline deadline, ResponseExtras extras, httplib::Response& res) {
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [&s, job, meta, include_usage, deadline, extras](size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& text) {
          if (sink.write(text.data(), text.size())) return true;
          job->cancel();
          return false;
        };
        auto end = [&] {
          if (!write(std::string(kSseDone))) return false;
          sink.done();
          return true;
        };
        bool first = true;
        std::string echo = extras.echo;  // goes out with the first chunk
        LogprobsJson logprobs(meta.kind);
        for (;;) {
          auto next = next_update(s, job, deadline);
          if (!next) return is_client_closed(next.error()) ? false : write(stream_error_event(next.error())) && end();
          Job::Update& u = *next;
          const std::string text = std::exchange(echo, {}) + u.text;
          if (!text.empty() || !u.logprobs.empty() || (first && meta.kind == CompletionRequest::Kind::kChat)) {
            const json lp = extras.logprobs ? logprobs.render(u.logprobs) : json(nullptr);
            if (!write(sse_event(stream_chunk(meta, text, first, std::nullopt, include_usage, lp)))) return false;
            first = false;
          }
          if (!u.result) continue;
          const JobResult& r = *u.result;
          if (r.error) {
            if (!write(stream_error_event(*r.error))) return false;
          } else {
            if (!write(sse_event(stream_chunk(meta, "", first, r.finish_reason, include_usage)))) return false;
            if (include_usage &&
                !write(sse_event(usage_chunk(meta, {r.prompt_tokens, r.completion_tokens}))))
              return false;
          }
          return end();
        }
      },
      [&s, job](bool success) {
        if (!success) job->cancel();
        s.live.remove(job);
      });
}

void answer_whole(ServerState& s, const std::shared_ptr<Job>& job, const ResponseMeta& meta,
                  const RequestDeadline& deadline, const ResponseExtras& extras, httplib::Response& res) {
  std::string text = extras.echo;
  std::vector<TokenLogprob> entries;
  JobResult result;
  for (;;) {
    auto u = next_update(s, job, deadline);
    if (!u) {
      s.live.remove(job);
      return send_error(res, u.error());  // a client that left reads nothing; the log counts it
    }
    text += u->text;
    std::move(u->logprobs.begin(), u->logprobs.end(), std::back_inserter(entries));
    if (u->result) {
      result = *u->result;
      break;
    }
  }
  s.live.remove(job);
  if (result.error) return send_error(res, *result.error);
  if (result.finish_reason == "cancelled")
    return send_error(res, kShuttingDown);
  const json logprobs = extras.logprobs ? LogprobsJson(meta.kind).render(entries) : json(nullptr);
  res.set_content(json_text(full_response(meta, text, result.finish_reason,
                                          {result.prompt_tokens, result.completion_tokens}, logprobs)),
                  "application/json");
}

void handle_generation(ServerState& s, CompletionRequest::Kind kind, const httplib::Request& req,
                       httplib::Response& res) {
  const int64_t arrival = now_ns();
  auto parsed = kind == CompletionRequest::Kind::kChat ? parse_chat_request(req.body) : parse_completion_request(req.body);
  if (!parsed) return send_error(res, parsed.error());
  const RequestDeadline deadline = request_deadline(arrival, s.options.request_timeout_s, parsed->timeout_s);
  if (parsed->sampling.logprobs && !s.batching)
    return send_error(res, bad_request("logprobs", "unsupported",
                                       "'logprobs' needs the batching scheduler's logits; this server runs one "
                                       "sequence per worker (--batching off, or a model without a batched forward)"));
  auto prepared = prepare_request(*parsed, s.model_id, s.model);
  if (!prepared) return send_error(res, prepared.error());
  ResponseExtras extras{.echo = parsed->echo ? s.model.tokenizer().decode(prepared->prompt_ids) : std::string(),
                        .logprobs = parsed->sampling.logprobs.has_value()};
  auto job = std::make_shared<Job>(std::move(*prepared), arrival);
  s.live.add(job);  // before the push, so that a shutdown from now on cancels it
  if (!s.queue.try_push(job)) {
    s.live.remove(job);
    if (s.stopping.load())
      return send_error(res, kShuttingDown);
    res.set_header("Retry-After", "1");
    return send_error(res, {429,
                            fmt::format("the server is at capacity ({} requests waiting); retry later", s.queue.capacity()),
                            "rate_limit_exceeded", "", "queue_full"});
  }
  const bool chat = kind == CompletionRequest::Kind::kChat;
  ResponseMeta meta{kind, fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", s.next_id.fetch_add(1)),
                    int64_t(std::time(nullptr)), s.model_id};
  if (parsed->stream)
    stream_job(s, job, std::move(meta), parsed->include_usage, deadline, std::move(extras), res);
  else
    answer_whole(s, job, meta, deadline, extras, res);
}

void install_routes(httplib::Server& svr, ServerState& s) {
  require_bearer_key(svr, s.options.api_key);
  svr.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  svr.Get("/metrics", [&s](const httplib::Request&, httplib::Response& res) {
    res.set_content(s.metrics.render(s.queue.depth(), s.queue.capacity()), "text/plain; version=0.0.4");
  });
  svr.Get("/v1/models", [&s](const httplib::Request&, httplib::Response& res) {
    json model = {{"id", s.model_id}, {"object", "model"}, {"created", 0}, {"owned_by", "recur"},
                  {"max_model_len", s.model.config().context}};
    res.set_content(json_text({{"object", "list"}, {"data", json::array({model})}}), "application/json");
  });
  svr.Post("/v1/completions", [&s](const httplib::Request& req, httplib::Response& res) {
    handle_generation(s, CompletionRequest::Kind::kCompletion, req, res);
  });
  svr.Post("/v1/chat/completions", [&s](const httplib::Request& req, httplib::Response& res) {
    handle_generation(s, CompletionRequest::Kind::kChat, req, res);
  });
  // Errors httplib raises itself (unknown path 404, body too large 413, bad method 405) get
  // the same JSON shape as ours.
  svr.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    std::string message = res.status == 404   ? fmt::format("no route for {} {}", req.method, req.path)
                          : res.status == 413 ? "the request body is larger than the server accepts"
                                              : fmt::format("HTTP {}", res.status);
    send_error(res, {res.status, message, "invalid_request_error", "", res.status == 413 ? "body_too_large" : ""});
  });
  svr.set_logger([&s](const httplib::Request& req, const httplib::Response& res) {
    s.metrics.count_request(route_label(req.path), res.status);
  });
}

// SIGTERM and SIGINT are blocked in every thread and taken by sigwait on the calling thread.
sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  return set;
}

}  // namespace

void block_stop_signals() {
  sigset_t signals = stop_signals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);  // a client that left must not kill the server
}

FrontOptions front_options(const ServeOptions& options) {
  return {.handler_threads = size_t(options.http_threads), .max_body_bytes = options.max_body_bytes,
          .read_timeout_s = options.read_timeout_s};
}

Status serve_until_signal(HttpFront& server, const ServeOptions& options, const FrontOptions& front,
                          std::string_view what, const std::function<void()>& on_stop) {
  sigset_t signals = stop_signals();
  // httplib listens with a backlog of 5 (compiled into Debian's libcpp-httplib): 16 clients
  // connecting at once to a busy server overflow it, the kernel falls back to SYN cookies and
  // some connections get no response. listen() again on the bound socket raises it.
  int listen_fd = -1;
  server.set_socket_options([&listen_fd](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = sock;
  });
  int port = options.port;
  if (port == 0) {
    port = server.bind_to_any_port(options.host);
  } else if (!server.bind_to_port(options.host, port)) {
    port = -1;
  }
  if (port < 0 || listen_fd < 0)
    return io_error("cannot listen on {}:{} (in use, or not an address of this host)", options.host, options.port);
  ::listen(listen_fd, kServeListenBacklog);
  fmt::print(stderr, "listening on http://{}:{} ({})\n", options.host, port, what);
  Status served = ok_status();
  std::thread listener([&] { served = server.run(listen_fd, front); });
  int received = 0;
  sigwait(&signals, &received);
  fmt::print(stderr, "recur serve: {} received, shutting down\n", received == SIGTERM ? "SIGTERM" : "SIGINT");
  if (on_stop) on_stop();
  server.stop_front();
  listener.join();
  return served;
}

Status run_server(const ServeOptions& options) {
  block_stop_signals();
  if (options.queue_size < 1) return invalid_argument("--queue-size is {}; expected at least 1", options.queue_size);
  if (options.http_threads < 1) return invalid_argument("--http-threads is {}; expected at least 1", options.http_threads);
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, load_model(options.model_path, options.knobs));
  std::string id = options.model_id.empty() ? std::filesystem::path(options.model_path).stem().string() : options.model_id;
  ServerState s{options, *model, id, JobQueue(options.queue_size), {}, {}};
  const WorkerOptions worker_options{.workers = options.workers, .threads_per_worker = options.threads_per_worker,
                                     .batching = options.batching,
                                     .scheduler = {.max_sequences = options.max_seqs,
                                                   .max_batch_tokens = options.max_batch_tokens}};
  RECUR_ASSIGN_OR_RETURN(auto workers, EngineWorkers::start(*model, worker_options, s.queue, s.metrics, options.knobs));
  s.batching = workers->batching();
  HttpFront svr;
  svr.set_payload_max_length(options.max_body_bytes);
  install_routes(svr, s);
  const std::string batching = workers->batching() ? fmt::format("batching up to {} sequences, {} tokens per forward",
                                                                 options.max_seqs, options.max_batch_tokens)
                                                   : std::string("one sequence per worker");
  const std::string what = fmt::format("model {}, {} worker{}, {}, queue {}", id, options.workers,
                                       options.workers == 1 ? "" : "s", batching, options.queue_size);
  RECUR_RETURN_IF_ERROR(serve_until_signal(svr, options, front_options(options), what, [&s] {
    s.stopping.store(true);
    s.live.cancel_all();
    s.queue.close();
  }));
  workers.reset();
  return ok_status();
}

}  // namespace recur::serve
