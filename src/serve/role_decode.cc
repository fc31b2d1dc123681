// `recur serve --role decode` (role_workers.h): receive slots in a shared, TCP-served area; per
// request, the layers are received and verified (checksums, ready flags: transfer/kv_block.h),
// installed in a fresh sequence and generated from, one request at a time.
#include <cstdlib>
#include <memory>
#include <mutex>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>
#include <httplib.h>

#include "core/clock.h"
#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/sampler.h"
#include "engine/sequence_state.h"
#include "serve/kv_metrics.h"
#include "serve/role_protocol.h"
#include "serve/role_workers.h"
#include "serve/stop_matcher.h"

namespace recur::serve {
namespace {

using nlohmann::json;

constexpr std::chrono::milliseconds kDecodeReceiveTimeout{10000};

struct DecodeSlot {
  bool reserved = false;
  uint64_t generation = 0;
};

// What one request decodes from, once its state is installed.
struct DecodeJob {
  SeqId seq = -1;
  std::vector<float> logits;  // the prompt's last logits
  GenerateOptions options;
  std::vector<std::string> stop;
  int prompt_tokens = 0;
};

class DecodeWorker {
 public:
  static Result<std::unique_ptr<DecodeWorker>> create(const RoleOptions& o);
  void handle_reserve(httplib::Response& res);
  void handle_release(const httplib::Request& req, httplib::Response& res);
  void handle_decode(const httplib::Request& req, httplib::Response& res);
  std::string metrics() const {
    std::string out;
    kv_metrics_.render(out);
    return out;
  }

 private:
  Result<DecodeJob> receive(const json& msg, int slot);
  void release(int slot);
  Status generate(DecodeJob& job, const std::function<bool(const json&)>& emit);

  RoleEngine e_;
  std::unique_ptr<transfer::TransferEngine> engine_;
  transfer::KvLayout layout_;
  void* area_ = nullptr;
  transfer::RegionInfo region_;
  std::unique_ptr<transfer::KvReceiver> receiver_;
  std::string shm_name_, tcp_name_;
  std::mutex slots_mu_;
  std::vector<DecodeSlot> slots_;
  uint64_t next_generation_ = 1;
  std::mutex batch_mu_;  // one request decodes at a time
  KvTransferMetrics kv_metrics_;
};

Result<std::unique_ptr<DecodeWorker>> DecodeWorker::create(const RoleOptions& o) {
  if (o.kv_slots < 1) return invalid_argument("--kv-slots is {}; expected at least 1", o.kv_slots);
  auto w = std::make_unique<DecodeWorker>();
  RECUR_ASSIGN_OR_RETURN(w->e_, role_open_engine(o.serve));
  w->layout_ = w->e_.layout;
  const std::string segment = fmt::format("recur-decode-{}", getpid());
  RECUR_ASSIGN_OR_RETURN(double link, transfer::link_bytes_per_s(o.serve.knobs));
  RECUR_ASSIGN_OR_RETURN(w->engine_, transfer::TransferEngine::create(
                                         {.segment_name = segment, .listen = o.kv_listen, .link_bytes_per_s = link}));
  const size_t bytes = size_t(o.kv_slots) * w->layout_.sequence_bytes();
  RECUR_ASSIGN_OR_RETURN(w->area_, w->engine_->allocate_shared(bytes));
  RECUR_ASSIGN_OR_RETURN(w->region_, w->engine_->register_memory(w->area_, bytes, "cpu:0"));
  w->receiver_ = std::make_unique<transfer::KvReceiver>(std::span(static_cast<std::byte*>(w->area_), bytes), w->layout_);
  const std::string host = o.kv_listen.substr(0, o.kv_listen.rfind(':'));
  w->shm_name_ = segment;
  w->tcp_name_ = fmt::format("{}:{}/{}", host, w->engine_->port(), segment);
  w->slots_.resize(size_t(o.kv_slots));
  return w;
}

void DecodeWorker::handle_reserve(httplib::Response& res) {
  std::lock_guard lock(slots_mu_);
  for (size_t i = 0; i < slots_.size(); ++i) {
    if (slots_[i].reserved) continue;
    slots_[i] = {.reserved = true, .generation = next_generation_++};
    role_send_json(res, {{"slot", i}, {"generation", slots_[i].generation},
                         {"area_offset", region_.segment_offset + i * layout_.sequence_bytes()},
                         {"shm", shm_name_}, {"tcp", tcp_name_}, {"slot_bytes", layout_.sequence_bytes()}});
    return;
  }
  res.set_header("Retry-After", "1");
  role_send_error(res, {429, fmt::format("decode worker: all {} receive slots are in use", slots_.size()),
                        "rate_limit_exceeded", "", "kv_slots_full"});
}

void DecodeWorker::release(int slot) {
  std::lock_guard lock(slots_mu_);
  if (slot >= 0 && size_t(slot) < slots_.size()) slots_[size_t(slot)].reserved = false;
}

void DecodeWorker::handle_release(const httplib::Request& req, httplib::Response& res) {
  auto msg = role_parse_body(req.body);
  if (!msg) return role_send_error(res, msg.error());
  release(msg->value("slot", -1));
  role_send_json(res, {{"released", true}});
}

// Waits for each layer in order, verifies it and installs it; then the logits.
Result<DecodeJob> DecodeWorker::receive(const json& msg, int slot) {
  const int64_t t0 = now_ns();
  DecodeJob job;
  const auto ids = msg.at("prompt_ids").get<std::vector<TokenId>>();
  job.prompt_tokens = int(ids.size());
  job.options.max_new_tokens = msg.at("max_tokens").get<int>();
  job.options.sampling = {.temperature = msg.at("temperature").get<float>(), .top_p = msg.at("top_p").get<float>(),
                          .seed = msg.at("seed").get<uint64_t>()};
  job.options.stop_at_eos = msg.at("stop_at_eos").get<bool>();
  job.stop = msg.at("stop").get<std::vector<std::string>>();
  const uint64_t generation = msg.at("generation").get<uint64_t>();
  const int64_t request = msg.at("request").get<int64_t>();
  const size_t area_offset = size_t(slot) * layout_.sequence_bytes();
  if (job.prompt_tokens < 1 || job.prompt_tokens + job.options.max_new_tokens > e_.model->config().context)
    return invalid_argument("decode: {} prompt tokens plus max_tokens {} do not fit the context of {}",
                            job.prompt_tokens, job.options.max_new_tokens, e_.model->config().context);
  RECUR_ASSIGN_OR_RETURN(job.seq, e_.batch->add_sequence());
  uint64_t bytes = 0;
  auto fail = [&](Error e) -> Result<DecodeJob> {
    (void)e_.batch->free_sequence(job.seq);
    kv_metrics_.count_failure();
    return unexpected(std::move(e));
  };
  std::vector<std::byte> block;
  const int layers = e_.model->config().n_layers;
  for (int l = 0; l <= layers; ++l) {
    size_t n = size_t(e_.model->config().vocab) * sizeof(float);
    if (l < layers) {
      auto state_bytes = layer_state_bytes(*e_.batch, job.seq, l, job.prompt_tokens);
      if (!state_bytes) return fail(state_bytes.error());
      n = *state_bytes;
    }
    block.resize(n);
    const transfer::KvPageOut out{block.data(), n};
    Status s = receiver_->receive_layer(request, generation, area_offset, l, std::span(&out, 1), kDecodeReceiveTimeout);
    if (s && l < layers) s = import_layer_state(*e_.batch, job.seq, l, block);
    if (!s) return fail(Error(s.error().code(), fmt::format("layer {}: {}", l, s.error().message())));
    if (l == layers) {
      job.logits.resize(n / sizeof(float));
      std::memcpy(job.logits.data(), block.data(), n);
    }
    bytes += n;
  }
  if (Status s = set_sequence_position(*e_.batch, job.seq, job.prompt_tokens); !s) return fail(s.error());
  kv_metrics_.observe(bytes, double(now_ns() - t0) / 1e9);
  if (std::getenv("RECUR_FAULT_DECODE_EXIT") != nullptr) _exit(3);  // fault tests: die mid-request
  return job;
}

// generate_from_ids's loop (engine/generate.h) from the received logits, over the batch.
Status DecodeWorker::generate(DecodeJob& job, const std::function<bool(const json&)>& emit) {
  const Tokenizer& tok = e_.model->tokenizer();
  Sampler sampler(job.options.sampling);
  StopMatcher matcher(job.stop);
  std::span<const float> logits = job.logits;
  int generated = 0;
  bool eos = false, first = true;
  for (int i = 0; i < job.options.max_new_tokens; ++i) {
    const TokenId next = sampler.sample(logits);
    ++generated;
    if (job.options.stop_at_eos && next == tok.vocabulary().eos) {
      eos = true;
      break;
    }
    std::string piece = tok.piece(next);
    if (first && tok.vocabulary().add_space_prefix && job.prompt_tokens <= 1 && !piece.empty() && piece[0] == ' ')
      piece.erase(0, 1);
    first = false;
    std::string text = matcher.feed(piece);
    if (!text.empty() && !emit(json{{"text", text}})) return ok_status();  // the router went away
    if (matcher.stopped() || i + 1 == job.options.max_new_tokens) break;
    const BatchToken row{.seq = job.seq, .token = next, .want_logits = true};
    RECUR_ASSIGN_OR_RETURN(logits, e_.batch->forward(std::span(&row, 1)));
  }
  std::string rest = matcher.flush();
  if (!rest.empty()) emit(json{{"text", rest}});
  emit(json{{"finish_reason", eos || matcher.stopped() ? "stop" : "length"}, {"completion_tokens", generated}});
  return ok_status();
}

void DecodeWorker::handle_decode(const httplib::Request& req, httplib::Response& res) {
  auto msg = role_parse_body(req.body);
  if (!msg) return role_send_error(res, msg.error());
  const int slot = msg->value("slot", -1);
  if (slot < 0 || size_t(slot) >= slots_.size())
    return role_send_error(res, bad_request("slot", "bad_slot", "decode: slot {} is not one of this worker's {}", slot,
                                            slots_.size()));
  auto lock = std::make_shared<std::unique_lock<std::mutex>>(batch_mu_);
  Result<DecodeJob> job = internal_error("unset");
  try {
    job = receive(*msg, slot);
  } catch (const json::exception& e) {
    job = invalid_argument("decode message: {}", e.what());
  }
  release(slot);  // the state is installed (or failed): the slot may take the next transfer
  if (!job) {
    const bool bad = job.error().code() == ErrorCode::kInvalidArgument;
    return role_send_error(res, {bad ? 400 : 502, "decode worker: " + job.error().to_string(),
                                 bad ? "invalid_request_error" : "server_error", "",
                                 bad ? "" : "kv_transfer_failed"});
  }
  auto shared = std::make_shared<DecodeJob>(std::move(*job));
  res.set_chunked_content_provider(
      "application/x-ndjson",
      [this, shared](size_t, httplib::DataSink& sink) {
        auto emit = [&](const json& line) {
          const std::string text = json_text_line(line);
          return sink.write(text.data(), text.size());
        };
        if (Status s = generate(*shared, emit); !s)
          emit(json{{"error", {{"message", "generation failed: " + s.error().to_string()}, {"code", "engine_error"}}}});
        sink.done();
        return true;
      },
      [this, shared, lock](bool) { (void)e_.batch->free_sequence(shared->seq); });
}

}  // namespace

Status run_decode_worker(const RoleOptions& options) {
  block_stop_signals();
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<DecodeWorker> w, DecodeWorker::create(options));
  httplib::Server svr;
  role_add_worker_routes(svr, "decode", [&w] { return w->metrics(); });
  svr.Post("/kv/reserve", [&w](const httplib::Request&, httplib::Response& res) { w->handle_reserve(res); });
  svr.Post("/kv/release", [&w](const httplib::Request& req, httplib::Response& res) { w->handle_release(req, res); });
  svr.Post("/decode", [&w](const httplib::Request& req, httplib::Response& res) { w->handle_decode(req, res); });
  return serve_until_signal(svr, options.serve, "decode worker");
}

}  // namespace recur::serve
