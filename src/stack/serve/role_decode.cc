// `recur serve --role decode` (role_workers.h): receive slots in a shared, TCP-served area; per
// request, an HTTP thread receives and verifies the layers (checksums, ready flags:
// transfer/kv_block.h) into host memory and queues the request; a continuous-batching scheduler
// (batch_scheduler.h, as `--role all` runs it) installs each admitted request's state in a fresh
// sequence of its batch and decodes every running request together, one forward per step.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <random>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>
#include <httplib.h>

#include "core/clock.h"
#include "core/thread_pool.h"
#include "engine/sequence_state.h"
#include "serve/batch_scheduler.h"
#include "serve/bearer_auth.h"
#include "serve/http_front.h"
#include "serve/job_output.h"
#include "serve/job_queue.h"
#include "serve/kv_metrics.h"
#include "serve/live_jobs.h"
#include "serve/metrics.h"
#include "serve/role_protocol.h"
#include "serve/role_workers.h"

namespace recur::serve {
namespace {

using nlohmann::json;

constexpr std::chrono::milliseconds kDecodeReceiveTimeout{10000};
constexpr std::chrono::milliseconds kRouterCheckInterval{100};

// A receive slot: free; reserved by a router (which holds its token) until it sends /decode or
// /kv/release, or until the reservation expires; or receiving (a /decode copies its state out).
struct DecodeSlot {
  enum class State { kFree, kReserved, kReceiving };
  State state = State::kFree;
  uint64_t generation = 0;
  std::string token;        // names the reservation in /decode and /kv/release
  int64_t expires_ns = 0;   // kReserved: released by the next reserve after this
};

// 128 random bits as hex: a reservation's token (only its holder can use or release the slot).
std::string new_slot_token() {
  std::random_device random;  // /dev/urandom
  std::string token;
  for (int i = 0; i < 4; ++i) token += fmt::format("{:08x}", uint32_t(random()));
  return token;
}

// A request whose prompt state arrived: the verified layer blocks and the prompt's last logits,
// waiting for the scheduler to install them (decode_import_prompt). Only this worker's queue
// holds these, so the scheduler's import hook may cast its Job back.
struct DecodeJob : Job {
  DecodeJob(PreparedRequest request, int64_t arrival_ns) : Job(std::move(request), arrival_ns) {}
  std::vector<std::vector<std::byte>> layers;
  std::vector<float> logits;
};

// The scheduler's PromptImport: runs on its thread, between forwards.
Result<std::vector<float>> decode_import_prompt(Job& job, Batch& batch, SeqId seq) {
  // RECUR_FAULT_DECODE_HOLD=PATH: the scheduler waits here, so requests queue up behind this one
  // and are admitted together (a test's deterministic batch).
  role_fault_hold("RECUR_FAULT_DECODE_HOLD");
  auto& d = static_cast<DecodeJob&>(job);
  for (size_t l = 0; l < d.layers.size(); ++l) {
    Status s = import_layer_state(batch, seq, int(l), d.layers[l]);
    if (!s) return unexpected(Error(s.error().code(), fmt::format("layer {}: {}", l, s.error().message())));
  }
  RECUR_RETURN_IF_ERROR(set_sequence_position(batch, seq, int(job.request().prompt_ids.size())));
  if (std::getenv("RECUR_FAULT_DECODE_EXIT") != nullptr) _exit(3);  // fault tests: die mid-request
  d.layers = {};  // installed: the host copy is no longer needed
  return std::move(d.logits);
}

// A layer's state bytes as a function of the sequence's tokens: fixed + per_token * tokens
// (sequence_state.h: a KDA layer's state is fixed, an attention layer's grows per token).
struct DecodeLayerSize {
  size_t fixed = 0;
  size_t per_token = 0;
};

// Measured once on a probe sequence, so the HTTP threads can size blocks without the batch.
Result<std::vector<DecodeLayerSize>> decode_layer_sizes(Batch& batch, const ModelConfig& c) {
  RECUR_ASSIGN_OR_RETURN(SeqId probe, batch.add_sequence());
  std::vector<DecodeLayerSize> sizes;
  for (int l = 0; l < c.n_layers; ++l) {
    RECUR_ASSIGN_OR_RETURN(size_t one, layer_state_bytes(batch, probe, l, 1));
    RECUR_ASSIGN_OR_RETURN(size_t two, layer_state_bytes(batch, probe, l, 2));
    RECUR_ASSIGN_OR_RETURN(size_t full, layer_state_bytes(batch, probe, l, c.context));
    const DecodeLayerSize s{.fixed = one - (two - one), .per_token = two - one};
    if (two < one || full != s.fixed + s.per_token * size_t(c.context))
      return internal_error("decode worker: layer {}'s state is {}, {} and {} bytes at 1, 2 and {} tokens; expected "
                            "a fixed part plus a part per token", l, one, two, full, c.context);
    sizes.push_back(s);
  }
  RECUR_RETURN_IF_ERROR(batch.free_sequence(probe));
  return sizes;
}

class DecodeWorker {
 public:
  static Result<std::unique_ptr<DecodeWorker>> create(const RoleOptions& o);
  ~DecodeWorker();
  void handle_reserve(httplib::Response& res);
  // Takes the slot `msg` names for a /decode: its token must be the reservation's.
  expected<int, ApiError> claim(const json& msg);
  void handle_release(const httplib::Request& req, httplib::Response& res);
  void handle_decode(const httplib::Request& req, httplib::Response& res);
  void cancel_all() { live_.cancel_all(); }
  std::string metrics() const {
    std::string out = metrics_.render(queue_->depth(), queue_->capacity());
    kv_metrics_.render(out);
    out += fmt::format("# HELP recur_kv_reservations_expired_total receive slots released because their reservation "
                       "went unused for --kv-reserve-timeout-s\n# TYPE recur_kv_reservations_expired_total counter\n"
                       "recur_kv_reservations_expired_total {}\n", expired_reservations_.load());
    return out;
  }

 private:
  Result<std::shared_ptr<DecodeJob>> receive(const json& msg, int slot);
  void release(int slot);
  void relay(const std::shared_ptr<DecodeJob>& job, httplib::Response& res);
  void send_queue_full(httplib::Response& res) const {
    res.set_header("Retry-After", "1");
    role_send_error(res, {429, fmt::format("decode worker: its queue of {} requests is full", queue_->capacity()),
                          "rate_limit_exceeded", "", "queue_full"});
  }

  RoleEngine e_;
  std::vector<DecodeLayerSize> layer_sizes_;
  std::unique_ptr<transfer::TransferEngine> engine_;
  transfer::KvLayout layout_;
  void* area_ = nullptr;
  transfer::RegionInfo region_;
  std::unique_ptr<transfer::KvReceiver> receiver_;
  std::string shm_name_, tcp_name_, ucx_name_;  // ucx_name_: empty unless serve.kv_transfer=ucx
  std::mutex slots_mu_;
  std::vector<DecodeSlot> slots_;
  uint64_t next_generation_ = 1;
  int64_t reserve_timeout_ns_ = 0;
  std::atomic<uint64_t> expired_reservations_{0};
  Metrics metrics_;
  KvTransferMetrics kv_metrics_;
  std::unique_ptr<JobQueue> queue_;  // received requests waiting for a batch slot (bounded: 429)
  LiveJobs live_;
  std::unique_ptr<BatchScheduler> scheduler_;
  std::thread scheduler_thread_;
};

Result<std::unique_ptr<DecodeWorker>> DecodeWorker::create(const RoleOptions& o) {
  if (o.kv_slots < 1) return invalid_argument("--kv-slots is {}; expected at least 1", o.kv_slots);
  if (o.serve.queue_size < 1) return invalid_argument("--queue-size is {}; expected at least 1", o.serve.queue_size);
  auto w = std::make_unique<DecodeWorker>();
  RECUR_ASSIGN_OR_RETURN(w->e_, role_open_engine(o.serve));
  w->layout_ = w->e_.layout;
  RECUR_ASSIGN_OR_RETURN(w->layer_sizes_, decode_layer_sizes(*w->e_.batch, w->e_.model->config()));
  w->e_.batch.reset();  // the scheduler's batch holds the sequences
  const std::string segment = fmt::format("recur-decode-{}", getpid());
  RECUR_ASSIGN_OR_RETURN(double link, transfer::link_bytes_per_s(o.serve.knobs));
  // serve.kv_transfer=ucx: the slots are registered with UCX too, for prefill workers that reach
  // them through UCX (their setup still passes --kv-listen's handshake).
  RECUR_ASSIGN_OR_RETURN(const std::string mode, role_kv_transfer_mode(o.serve.knobs));
  RECUR_ASSIGN_OR_RETURN(w->engine_, transfer::TransferEngine::create(
                                         {.segment_name = segment, .listen = o.kv_listen, .link_bytes_per_s = link,
                                          .peer_key = o.serve.peer_key,  // --kv-listen serves only key holders
                                          .ucx = mode == "ucx"}));
  const size_t bytes = size_t(o.kv_slots) * w->layout_.sequence_bytes();
  RECUR_ASSIGN_OR_RETURN(w->area_, w->engine_->allocate_shared(bytes));
  RECUR_ASSIGN_OR_RETURN(w->region_, w->engine_->register_memory(w->area_, bytes, "cpu:0"));
  w->receiver_ = std::make_unique<transfer::KvReceiver>(std::span(static_cast<std::byte*>(w->area_), bytes), w->layout_);
  const std::string host = o.kv_listen.substr(0, o.kv_listen.rfind(':'));
  w->shm_name_ = segment;
  w->tcp_name_ = fmt::format("{}:{}/{}", host, w->engine_->port(), segment);
  if (mode == "ucx") w->ucx_name_ = "ucx://" + w->tcp_name_;
  w->slots_.resize(size_t(o.kv_slots));
  w->reserve_timeout_ns_ = int64_t(o.kv_reserve_timeout_s) * 1'000'000'000;
  w->queue_ = std::make_unique<JobQueue>(o.serve.queue_size);
  const SchedulerOptions so{.max_sequences = o.serve.max_seqs, .max_batch_tokens = o.serve.max_batch_tokens,
                            .import_prompt = decode_import_prompt};
  RECUR_ASSIGN_OR_RETURN(w->scheduler_, BatchScheduler::create(*w->e_.model, *w->e_.pool, so, *w->queue_,
                                                               w->metrics_, o.serve.knobs));
  w->scheduler_thread_ = std::thread([s = w->scheduler_.get()] { s->run(); });
  return w;
}

DecodeWorker::~DecodeWorker() {
  if (queue_) queue_->close();
  if (scheduler_thread_.joinable()) scheduler_thread_.join();
}

void DecodeWorker::handle_reserve(httplib::Response& res) {
  if (queue_->depth() >= queue_->capacity()) return send_queue_full(res);  // a prefill now would be wasted
  std::lock_guard lock(slots_mu_);
  const int64_t now = now_ns();
  for (DecodeSlot& slot : slots_)  // a router that reserved and never came back (died, or never meant to)
    if (slot.state == DecodeSlot::State::kReserved && slot.expires_ns <= now) {
      slot = {};
      expired_reservations_.fetch_add(1);
    }
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].state != DecodeSlot::State::kFree) continue;
    slots_[i] = {.state = DecodeSlot::State::kReserved, .generation = next_generation_++, .token = new_slot_token(),
                 .expires_ns = now + reserve_timeout_ns_};
    role_send_json(res, {{"slot", i}, {"generation", slots_[i].generation}, {"token", slots_[i].token},
                         {"area_offset", region_.segment_offset + i * layout_.sequence_bytes()},
                         {"shm", shm_name_}, {"tcp", tcp_name_}, {"ucx", ucx_name_},
                         {"slot_bytes", layout_.sequence_bytes()}});
    return;
  }
  res.set_header("Retry-After", "1");
  role_send_error(res, {429, fmt::format("decode worker: all {} receive slots are in use", slots_.size()),
                        "rate_limit_exceeded", "", "kv_slots_full"});
}

void DecodeWorker::release(int slot) {
  std::lock_guard lock(slots_mu_);
  slots_[size_t(slot)] = {};
}

// The slot `msg` names ("slot", "token"), when it is reserved under that token; else a 400 (no
// such slot) or 409 (not reserved, expired, or someone else's reservation).
expected<int, ApiError> reserved_slot(const json& msg, std::vector<DecodeSlot>& slots) {
  const json slot_field = msg.value("slot", json());
  const json token_field = msg.value("token", json());
  if (!slot_field.is_number_integer() || slot_field.get<int64_t>() < 0 || size_t(slot_field.get<int64_t>()) >= slots.size())
    return unexpected(bad_request("slot", "bad_slot", "'slot' must be one of this worker's {} slots, got {}", slots.size(),
                                  slot_field.dump()));
  if (!token_field.is_string())
    return unexpected(bad_request("token", "bad_slot", "'token' must be the reservation's token (a string)"));
  const int slot = int(slot_field.get<int64_t>());
  const DecodeSlot& s = slots[size_t(slot)];
  if (s.state != DecodeSlot::State::kReserved || !same_secret(token_field.get<std::string>(), s.token))
    return unexpected(ApiError{409, fmt::format("slot {} is not reserved under this token (released, expired, or "
                                                "another request's)", slot), "invalid_request_error", "token",
                               "slot_not_owned"});
  return slot;
}

expected<int, ApiError> DecodeWorker::claim(const json& msg) {
  std::lock_guard lock(slots_mu_);
  auto slot = reserved_slot(msg, slots_);
  if (slot) slots_[size_t(*slot)].state = DecodeSlot::State::kReceiving;  // no longer expires
  return slot;
}

void DecodeWorker::handle_release(const httplib::Request& req, httplib::Response& res) {
  auto msg = role_parse_body(req.body);
  if (!msg) return role_send_error(res, msg.error());
  std::lock_guard lock(slots_mu_);
  auto slot = reserved_slot(*msg, slots_);
  if (!slot) return role_send_error(res, slot.error());
  slots_[size_t(*slot)] = {};
  role_send_json(res, {{"released", true}});
}

// Waits for each layer in order and verifies it into host memory; then the logits. The
// scheduler installs them when it admits the request (decode_import_prompt).
Result<std::shared_ptr<DecodeJob>> DecodeWorker::receive(const json& msg, int slot) {
  const int64_t t0 = now_ns();
  PreparedRequest p;
  p.prompt_ids = msg.at("prompt_ids").get<std::vector<TokenId>>();
  p.options.max_new_tokens = msg.at("max_tokens").get<int>();
  p.options.sampling = {.temperature = msg.at("temperature").get<float>(), .top_p = msg.at("top_p").get<float>(),
                        .seed = msg.at("seed").get<uint64_t>()};
  p.options.stop_at_eos = msg.at("stop_at_eos").get<bool>();
  p.stop = msg.at("stop").get<std::vector<std::string>>();
  const uint64_t generation = msg.at("generation").get<uint64_t>();
  const int64_t request = msg.at("request").get<int64_t>();
  const size_t area_offset = size_t(slot) * layout_.sequence_bytes();
  const ModelConfig& c = e_.model->config();
  const int tokens = int(p.prompt_ids.size());
  if (tokens < 1 || tokens + p.options.max_new_tokens > c.context)
    return invalid_argument("decode: {} prompt tokens plus max_tokens {} do not fit the context of {}", tokens,
                            p.options.max_new_tokens, c.context);
  auto job = std::make_shared<DecodeJob>(std::move(p), t0);
  job->layers.resize(size_t(c.n_layers));
  std::vector<std::byte> logits(size_t(c.vocab) * sizeof(float));
  uint64_t bytes = 0;
  for (int l = 0; l <= c.n_layers; ++l) {
    std::vector<std::byte>& block = l < c.n_layers ? job->layers[size_t(l)] : logits;
    if (l < c.n_layers) block.resize(layer_sizes_[size_t(l)].fixed + layer_sizes_[size_t(l)].per_token * size_t(tokens));
    const transfer::KvPageOut out{block.data(), block.size()};
    Status s = receiver_->receive_layer(request, generation, area_offset, l, std::span(&out, 1), kDecodeReceiveTimeout);
    if (!s) {
      kv_metrics_.count_failure();
      return unexpected(Error(s.error().code(), fmt::format("layer {}: {}", l, s.error().message())));
    }
    bytes += block.size();
  }
  job->logits.resize(size_t(c.vocab));
  std::memcpy(job->logits.data(), logits.data(), logits.size());
  kv_metrics_.observe(bytes, double(now_ns() - t0) / 1e9);
  return job;
}

// Streams the job's text as newline-delimited JSON. The router closing the stream (its client
// left, or the request's deadline passed) cancels the job: seen by a failed write, or within
// kRouterCheckInterval while no text comes (the job queued, or its admission held), so a
// queued job leaves the queue and a running one is freed at the scheduler's next step.
void DecodeWorker::relay(const std::shared_ptr<DecodeJob>& job, httplib::Response& res) {
  res.set_chunked_content_provider(
      "application/x-ndjson",
      [this, job](size_t, httplib::DataSink& sink) {
        auto emit = [&](const json& line) {
          const std::string text = json_text_line(line);
          if (sink.write(text.data(), text.size())) return true;
          cancel_job(job, *queue_, metrics_);
          return false;
        };
        for (;;) {
          std::optional<Job::Update> next = job->wait_update_for(kRouterCheckInterval);
          if (!next && http_client_gone()) {
            cancel_job(job, *queue_, metrics_);
            return false;
          }
          if (!next) continue;
          Job::Update& u = *next;
          if (!u.text.empty() && !emit(json{{"text", u.text}})) return false;
          if (!u.result) continue;
          const JobResult& r = *u.result;
          if (r.error) {
            emit(r.error->to_json());
          } else if (r.finish_reason != "cancelled") {
            emit(json{{"finish_reason", r.finish_reason}, {"completion_tokens", r.completion_tokens}});
          }
          sink.done();
          return true;
        }
      },
      [this, job](bool success) {
        if (!success) job->cancel();
        live_.remove(job);
      });
}

void DecodeWorker::handle_decode(const httplib::Request& req, httplib::Response& res) {
  auto msg = role_parse_body(req.body);
  if (!msg) return role_send_error(res, msg.error());
  auto claimed = claim(*msg);
  if (!claimed) return role_send_error(res, claimed.error());
  const int slot = *claimed;
  Result<std::shared_ptr<DecodeJob>> job = internal_error("unset");
  try {
    job = receive(*msg, slot);
  } catch (const json::exception& e) {
    job = invalid_argument("decode message: {}", e.what());
  }
  release(slot);  // the state is copied out (or failed): the slot may take the next transfer
  if (!job) {
    const bool bad = job.error().code() == ErrorCode::kInvalidArgument;
    return role_send_error(res, {bad ? 400 : 502, "decode worker: " + job.error().to_string(),
                                 bad ? "invalid_request_error" : "server_error", "",
                                 bad ? "" : "kv_transfer_failed"});
  }
  live_.add(*job);  // before the push, so that a shutdown from now on cancels it
  if (!queue_->try_push(*job)) {
    live_.remove(*job);
    return send_queue_full(res);
  }
  relay(*job, res);
}

}  // namespace

Status run_decode_worker(const RoleOptions& options) {
  block_stop_signals();
  RECUR_RETURN_IF_ERROR(role_check_peer_key(options.serve, "decode"));
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<DecodeWorker> w, DecodeWorker::create(options));
  HttpFront svr;
  require_bearer_key(svr, options.serve.peer_key, /*metrics_open=*/true);
  FrontOptions front = front_options(options.serve);
  // Each streaming /decode holds a thread for its request's life: room for them and for reserves.
  front.handler_threads = size_t(std::max(options.serve.http_threads, options.serve.max_seqs + 8));
  role_add_worker_routes(svr, "decode", [&w] { return w->metrics(); });
  svr.Post("/kv/reserve", [&w](const httplib::Request&, httplib::Response& res) { w->handle_reserve(res); });
  svr.Post("/kv/release", [&w](const httplib::Request& req, httplib::Response& res) { w->handle_release(req, res); });
  svr.Post("/decode", [&w](const httplib::Request& req, httplib::Response& res) { w->handle_decode(req, res); });
  return serve_until_signal(svr, options.serve, front, "decode worker", [&w] { w->cancel_all(); });
}

}  // namespace recur::serve
