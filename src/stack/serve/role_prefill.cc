// `recur serve --role prefill` (role_workers.h): one prompt at a time, each layer's state sent as
// soon as the layer is computed (the batch's layer hook), overlapping the later layers' compute.
// A chat prompt with images comes with the encoded rows (role_protocol.h), which enter the
// forward in place of their positions' placeholder tokens, as in `--role all`.
#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <unistd.h>

#include <fmt/format.h>
#include <httplib.h>

#include "core/aligned_buffer.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/thread_pool.h"
#include "engine/sequence_state.h"
#include "serve/bearer_auth.h"
#include "serve/kv_metrics.h"
#include "serve/role_protocol.h"
#include "serve/role_workers.h"

namespace recur::serve {
namespace {

using nlohmann::json;

constexpr std::chrono::milliseconds kPrefillSendTimeout{10000};

ApiError prefill_failure(const Error& e) {
  return {502, "prefill worker: " + e.to_string(), "server_error", "", "kv_transfer_failed"};
}

// Names a prefill across routers: its receive slot's decode worker (the "tcp" address of the
// reservation) and generation, which /prefill and /prefill/cancel both carry. (Request ids are
// per router, so two routers' requests may share one.)
Result<std::string> prefill_cancel_key(const json& msg) {
  const json tcp = msg.value("tcp", json()), generation = msg.value("generation", json());
  if (!tcp.is_string() || !generation.is_number_unsigned())
    return invalid_argument("'tcp' (a string) and 'generation' (a number) name the reservation of the prefill");
  return fmt::format("{}#{}", tcp.get<std::string>(), generation.get<uint64_t>());
}

// Prefills the router gave up (its client left, or the deadline passed) while they wait for or
// run (POST /prefill/cancel). A cancel may come before its prefill: at most kMaxCancels are kept,
// the oldest dropped first.
class CancelledRequests {
 public:
  static constexpr size_t kMaxCancels = 256;
  void add(const std::string& request) {
    std::lock_guard lock(mu_);
    ids_.push_back(request);
    if (ids_.size() > kMaxCancels) ids_.pop_front();
  }
  bool contains(const std::string& request) const {
    std::lock_guard lock(mu_);
    return std::find(ids_.begin(), ids_.end(), request) != ids_.end();
  }
  // Whether `request` was cancelled; forgets it.
  bool take(const std::string& request) {
    std::lock_guard lock(mu_);
    auto it = std::find(ids_.begin(), ids_.end(), request);
    if (it == ids_.end()) return false;
    ids_.erase(it);
    return true;
  }

 private:
  mutable std::mutex mu_;
  std::deque<std::string> ids_;
};

class PrefillWorker {
 public:
  static Result<std::unique_ptr<PrefillWorker>> create(const RoleOptions& o);
  void handle_prefill(const httplib::Request& req, httplib::Response& res);
  void handle_cancel(const httplib::Request& req, httplib::Response& res);
  std::string metrics() const {
    std::string out;
    kv_metrics_.render(out);
    out += fmt::format("# HELP recur_prefill_cancelled_total prefills the router cancelled (its client left, or the "
                       "deadline passed)\n# TYPE recur_prefill_cancelled_total counter\nrecur_prefill_cancelled_total "
                       "{}\n", cancelled_total_.load());
    return out;
  }

 private:
  struct Peer {
    transfer::SegmentHandle segment;
    std::unique_ptr<transfer::KvSender> sender;
  };
  Result<json> prefill(const json& msg);
  Result<Peer*> peer(const std::string& name);
  Status corrupt_first_block(Peer& p, uint64_t area_offset);

  RoleEngine e_;
  std::unique_ptr<transfer::TransferEngine> engine_;
  transfer::KvLayout layout_;
  AlignedBuffer staging_;  // one block per layer plus the logits, registered
  std::string mode_;
  std::map<std::string, Peer> peers_;
  std::mutex mu_;  // one prompt at a time
  CancelledRequests cancels_;
  std::atomic<uint64_t> cancelled_total_{0};
  KvTransferMetrics kv_metrics_;
};

Result<std::unique_ptr<PrefillWorker>> PrefillWorker::create(const RoleOptions& o) {
  auto w = std::make_unique<PrefillWorker>();
  RECUR_ASSIGN_OR_RETURN(w->mode_, role_kv_transfer_mode(o.serve.knobs));
  RECUR_ASSIGN_OR_RETURN(w->e_, role_open_engine(o.serve));
  w->layout_ = w->e_.layout;
  RECUR_ASSIGN_OR_RETURN(double link, transfer::link_bytes_per_s(o.serve.knobs));
  RECUR_ASSIGN_OR_RETURN(w->engine_, transfer::TransferEngine::create(
                                         {.segment_name = fmt::format("recur-prefill-{}", getpid()), .listen = "",
                                          .link_bytes_per_s = link, .peer_key = o.serve.peer_key}));
  // The blocks, then 64 bytes for a fault-injected byte.
  w->staging_ = AlignedBuffer(size_t(w->layout_.layers) * w->layout_.max_block_bytes + 64, true);
  RECUR_RETURN_IF_ERROR(w->engine_->register_memory(w->staging_.data(), w->staging_.size(), "cpu:0"));
  return w;
}

Result<PrefillWorker::Peer*> PrefillWorker::peer(const std::string& name) {
  auto it = peers_.find(name);
  if (it != peers_.end()) return &it->second;
  RECUR_ASSIGN_OR_RETURN(transfer::SegmentHandle segment, engine_->open_segment(name));
  // For ucx: the transports UCX picked (UCX_TLS), worth knowing when the bandwidth surprises.
  if (auto how = engine_->segment_transport(segment)) LOG_INFO("kv transfer: sending to {} over {}", name, *how);
  Peer p{segment, std::make_unique<transfer::KvSender>(*engine_, segment, layout_)};
  return &peers_.emplace(name, std::move(p)).first->second;
}

// RECUR_FAULT_CORRUPT_KV=1: after the transfer completed, flip one payload byte of layer 0 in
// the decode worker's slot (what a bit flip in flight or at rest looks like to the reader).
Status PrefillWorker::corrupt_first_block(Peer& p, uint64_t area_offset) {
  std::byte* flipped = staging_.data() + size_t(layout_.layers) * layout_.max_block_bytes;
  *flipped = staging_.data()[0] ^ std::byte{0x5a};  // block 0's first byte is its header's magic
  RECUR_ASSIGN_OR_RETURN(transfer::BatchId b, engine_->allocate_batch(1));
  const transfer::TransferRequest r{.opcode = transfer::TransferOpcode::kWrite, .source = flipped,
                                    .target = p.segment,
                                    .target_offset = area_offset + layout_.slot_offset(0, 0) +
                                                     transfer::kKvBlockHeaderBytes,
                                    .length = 1};
  RECUR_RETURN_IF_ERROR(engine_->submit(b, std::span(&r, 1)));
  Status s = engine_->wait_batch(b, kPrefillSendTimeout);
  RECUR_RETURN_IF_ERROR(engine_->free_batch(b));
  return s;
}

Result<json> PrefillWorker::prefill(const json& msg) {
  PreparedRequest prompt;  // the ids and, for a chat with images, the rows that replace some
  prompt.prompt_ids = msg.at("prompt_ids").get<std::vector<TokenId>>();
  const std::vector<TokenId>& ids = prompt.prompt_ids;
  const int64_t request = msg.at("request").get<int64_t>();
  if (ids.empty() || int(ids.size()) > e_.model->config().context)
    return invalid_argument("prefill: {} prompt tokens; expected 1..{}", ids.size(), e_.model->config().context);
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= e_.model->config().vocab)
      return invalid_argument("prefill: prompt_ids[{}] = {} is outside the vocabulary of {}", i, ids[i],
                              e_.model->config().vocab);
  RECUR_RETURN_IF_ERROR(role_get_prompt_embeddings(msg, e_.model->config().dim, prompt));
  // Checked before the prefill, between chunks and per layer of the last one: a cancelled
  // prefill stops sending, waits for what is in flight and answers (handle_prefill: 499).
  RECUR_ASSIGN_OR_RETURN(const std::string cancel_key, prefill_cancel_key(msg));
  auto cancelled = [&] { return cancels_.contains(cancel_key); };
  const Error cancel_error(ErrorCode::kFailedPrecondition, fmt::format("request {} was cancelled", request));
  if (cancelled()) return unexpected(cancel_error);
  Peer* p = nullptr;
  uint64_t area_offset = 0;
  if (mode_ != "off") {
    if (msg.at("slot_bytes").get<uint64_t>() != layout_.sequence_bytes())
      return invalid_argument("prefill: the decode worker's slot is {} bytes, this model's transfer needs {} (not "
                              "the same model?)", msg.at("slot_bytes").get<uint64_t>(), layout_.sequence_bytes());
    const std::string segment = msg.value(mode_, std::string());
    if (segment.empty())
      return make_error(ErrorCode::kFailedPrecondition,
                        "prefill: the decode worker offers no '{}' segment (start it with --set serve.kv_transfer={} "
                        "too)", mode_, mode_);
    RECUR_ASSIGN_OR_RETURN(p, peer(segment));
    area_offset = msg.at("area_offset").get<uint64_t>();
    RECUR_RETURN_IF_ERROR(p->sender->begin_sequence(request, area_offset, msg.at("generation").get<uint64_t>()));
  }
  RECUR_ASSIGN_OR_RETURN(SeqId seq, e_.batch->add_sequence());
  const int64_t t0 = now_ns();
  int64_t first_sent = 0;  // when layer 0 was handed to the transfer engine
  int64_t hook_ns = 0;     // the forward thread's time in the layer hook (export + send_layer)
  uint64_t bytes = 0;
  Status sent = ok_status();
  auto send_block = [&](int layer, size_t n) {
    if (!sent || p == nullptr) return;
    if (first_sent == 0) first_sent = now_ns();
    const transfer::KvPage page{staging_.data() + size_t(layer) * layout_.max_block_bytes, n};
    sent = p->sender->send_layer(request, layer, std::span(&page, 1));
    bytes += n;
    // RECUR_FAULT_PREFILL_PAUSE=PATH: a test's point to SIGKILL this worker or its decode worker
    // in the middle of a transfer.
    if (layer == 0) role_fault_hold("RECUR_FAULT_PREFILL_PAUSE", cancelled);
  };
  // Earlier chunks only fill the cache; the last chunk's layer hook sends each finished layer.
  const size_t chunk = size_t(e_.batch_options.max_batch_tokens);
  std::vector<BatchToken> rows;
  Result<std::span<const float>> logits = std::span<const float>();
  for (size_t start = 0; start < ids.size() && logits && !cancelled(); start += chunk) {
    const size_t end = std::min(ids.size(), start + chunk);
    rows.clear();
    for (size_t i = start; i < end; ++i)
      rows.push_back({.seq = seq, .token = ids[i], .want_logits = i + 1 == ids.size(),
                      .embedding = prompt.prompt_embedding(i)});
    if (end == ids.size() && p != nullptr)  // off: the forward alone, the baseline
      e_.batch->set_layer_hook([&](int layer) {
        const int64_t h0 = now_ns();
        if (sent && cancelled()) sent = unexpected(cancel_error);
        if (!sent) return;
        auto n = layer_state_bytes(*e_.batch, seq, layer);
        if (!n) sent = unexpected(n.error());
        if (!sent) return;
        std::span<std::byte> block(staging_.data() + size_t(layer) * layout_.max_block_bytes, *n);
        sent = export_layer_state(*e_.batch, seq, layer, block);
        send_block(layer, *n);
        hook_ns += now_ns() - h0;
      });
    logits = e_.batch->forward(rows);
    e_.batch->set_layer_hook(nullptr);
  }
  const int64_t forward_end = now_ns();
  Status freed = e_.batch->free_sequence(seq);
  if (!logits) return unexpected(logits.error());
  RECUR_RETURN_IF_ERROR(freed);
  if (sent && cancelled()) sent = unexpected(cancel_error);
  const int last = e_.model->config().n_layers;
  std::memcpy(staging_.data() + size_t(last) * layout_.max_block_bytes, logits->data(), logits->size_bytes());
  send_block(last, logits->size_bytes());
  if (p != nullptr) {
    Status finished = p->sender->finish_sequence(request, kPrefillSendTimeout);
    if (sent) sent = finished;
    if (sent && std::getenv("RECUR_FAULT_CORRUPT_KV") != nullptr) sent = corrupt_first_block(*p, area_offset);
    if (!sent) {
      if (!cancelled()) kv_metrics_.count_failure();
      return unexpected(sent.error());
    }
  }
  const int64_t t1 = now_ns();
  const double transfer_seconds = p != nullptr ? double(t1 - first_sent) / 1e9 : 0.0;
  if (p != nullptr) kv_metrics_.observe(bytes, transfer_seconds);
  return json{{"prompt_tokens", ids.size()}, {"bytes", bytes}, {"transfer_seconds", transfer_seconds},
              {"prefill_seconds", double(t1 - t0) / 1e9}, {"hook_seconds", double(hook_ns) / 1e9},
              {"tail_seconds", double(t1 - forward_end) / 1e9}, {"transport", mode_}};
}

void PrefillWorker::handle_prefill(const httplib::Request& req, httplib::Response& res) {
  auto msg = role_parse_body(req.body);
  if (!msg) return role_send_error(res, msg.error());
  std::lock_guard lock(mu_);
  Result<json> out = internal_error("unset");
  try {
    out = prefill(*msg);
  } catch (const json::exception& e) {
    return role_send_error(res, {400, fmt::format("prefill message: {}", e.what()), "invalid_request_error", "",
                                 "bad_message"});
  }
  auto key = prefill_cancel_key(*msg);
  if (key && cancels_.take(*key)) {  // the router no longer waits for it
    cancelled_total_.fetch_add(1);
    return role_send_error(res, {499, "prefill worker: the router cancelled the request", "invalid_request_error", "",
                                 "cancelled"});
  }
  if (!out) {
    const bool bad = out.error().code() == ErrorCode::kInvalidArgument;
    return role_send_error(res, bad ? ApiError{400, out.error().to_string(), "invalid_request_error", "", ""}
                                    : prefill_failure(out.error()));
  }
  role_send_json(res, *out);
}

void PrefillWorker::handle_cancel(const httplib::Request& req, httplib::Response& res) {
  auto msg = role_parse_body(req.body);
  if (!msg) return role_send_error(res, msg.error());
  auto key = prefill_cancel_key(*msg);
  if (!key) return role_send_error(res, bad_request("generation", "bad_message", "{}", key.error().message()));
  cancels_.add(*key);
  role_send_json(res, {{"cancelled", true}});
}

}  // namespace

Status run_prefill_worker(const RoleOptions& options) {
  block_stop_signals();
  RECUR_RETURN_IF_ERROR(role_check_peer_key(options.serve, "prefill"));
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<PrefillWorker> w, PrefillWorker::create(options));
  HttpFront svr;
  require_bearer_key(svr, options.serve.peer_key, /*metrics_open=*/true);
  role_add_worker_routes(svr, "prefill", [&w] { return w->metrics(); });
  svr.Post("/prefill", [&w](const httplib::Request& req, httplib::Response& res) { w->handle_prefill(req, res); });
  svr.Post("/prefill/cancel", [&w](const httplib::Request& req, httplib::Response& res) { w->handle_cancel(req, res); });
  return serve_until_signal(svr, options.serve, front_options(options.serve), "prefill worker");
}

}  // namespace recur::serve
