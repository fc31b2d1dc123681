#include "transfer/ucx_runtime.h"

#include <poll.h>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <random>

#include "core/log.h"
#include "trace/trace.h"
#include "transfer/ucx_defaults.h"
#include "transfer/ucx_known_faults.h"
#include "transfer/ucx_wire.h"

namespace recur::transfer {

// The progress thread's longest sleep: bounds how late it notices a deadline or a stop, and a
// completion whose event UCX did not signal.
constexpr int kUcxPollMs = 5;
// Its longest sleep while requests are in flight (UcxWatcher::busy, block receives).
constexpr int kUcxBusyPollMs = 1;
// How long the progress thread keeps polling after the last event before it sleeps.
constexpr auto kUcxSpin = std::chrono::microseconds(500);

Error ucx_error(ErrorCode code, std::string_view what, ucs_status_t status) {
  return Error(code, fmt::format("UCX {}: {}", what, ucs_status_string(status)));
}

std::string ucx_printed(const std::function<void(FILE*)>& print) {
  char* text = nullptr;
  size_t bytes = 0;
  FILE* out = open_memstream(&text, &bytes);
  if (out == nullptr) return {};
  print(out);
  std::fclose(out);
  std::string all(text, bytes);
  std::free(text);
  return all;
}

namespace {

// Refuses what this UCX release is known to abort on (ucx_known_faults.h) and warns, once per
// process, about what recur cannot avoid.
Status check_known_ucx_faults(const ucp_config_t* config) {
  UcxVersion version;
  ucp_get_version(&version.major, &version.minor, &version.release);
  const std::string printed =
      ucx_printed([&](FILE* out) { ucp_config_print(config, out, nullptr, UCS_CONFIG_PRINT_CONFIG); });
  if (auto why = ucx_proto_refusal(version, ucx_printed_setting(printed, "PROTO_ENABLE").value_or("n")))
    return make_error(ErrorCode::kUnsupported, "{}", *why);
  static std::once_flag warned;
  if (auto warning = ucx_tcp_wireup_warning(version, std::getenv("UCX_TLS")))
    std::call_once(warned, [&] { LOG_WARN("{}", *warning); });
  return ok_status();
}

}  // namespace

Result<std::unique_ptr<UcxRuntime>> UcxRuntime::create(const std::string& segment_name) {
  auto rt = std::unique_ptr<UcxRuntime>(new UcxRuntime());
  rt->segment_name_ = segment_name;
  ucp_config_t* config = nullptr;
  if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kUnsupported, "config (UCX_* environment)", s));
  if (Status known = check_known_ucx_faults(config); !known) {
    ucp_config_release(config);
    return unexpected(known.error());
  }
  for (const UcxSetting& d : ucx_tcp_defaults([](const char* key) { return std::getenv(key); })) {
    if (ucs_status_t st = ucp_config_modify(config, d.name.c_str(), d.value.c_str()); st != UCS_OK)
      LOG_WARN("UCX: cannot set tcp {}={}: {}", d.name, d.value, ucs_status_string(st));
  }
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_AM | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 1;  // mem_map and rkey_pack come from API and server threads
  params.name = rt->segment_name_.c_str();
  ucs_status_t s = ucp_init(&params, config, &rt->context_);
  ucp_config_release(config);
  if (s != UCS_OK) return unexpected(ucx_error(ErrorCode::kUnsupported, "init (no usable transport in UCX_TLS?)", s));
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SINGLE;  // only the progress thread calls it (after this setup)
  if (s = ucp_worker_create(rt->context_, &wp, &rt->worker_); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kUnsupported, "worker create", s));
  if (s = ucp_worker_get_efd(rt->worker_, &rt->event_fd_); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kUnsupported, "worker event fd", s));
  ucp_address_t* address = nullptr;
  size_t address_bytes = 0;
  if (s = ucp_worker_get_address(rt->worker_, &address, &address_bytes); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kInternal, "worker address", s));
  const auto* a = reinterpret_cast<const std::byte*>(address);
  rt->address_.assign(a, a + address_bytes);
  ucp_worker_release_address(rt->worker_, address);
  RECUR_RETURN_IF_ERROR(rt->install_am_handlers());
  rt->progress_ = std::thread([p = rt.get()] { p->progress_loop(); });
  return rt;
}

void UcxRuntime::stop() {
  {
    // Under the task lock: a task is either queued before this (and run below) or refused.
    std::lock_guard lock(task_mu_);
    stopping_.store(true);
  }
  if (worker_ != nullptr) ucp_worker_signal(worker_);
  if (progress_.joinable()) progress_.join();
  run_tasks();  // what was posted last (closing endpoints): this thread is the worker's now
}

UcxRuntime::~UcxRuntime() {
  stop();
  for (auto& [id, m] : mapped_)
    if (m.own_memh) ucp_mem_unmap(context_, m.memh);
  for (auto& [addr, a] : allocations_) ucp_mem_unmap(context_, a.memh);
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

void UcxRuntime::progress_loop() {
  trace::set_thread_name("kv_transfer_ucx");
  std::vector<pollfd> fds;
  std::vector<UcxWatcher*> polled;
  auto last_event = std::chrono::steady_clock::now();
  while (!stopping_.load()) {
    // While traffic flows, poll: a sleep per event (the event fd) costs a wake-up each time, and
    // RMA emulated over shared memory or TCP moves only as fast as the target progresses.
    for (;;) {
      const auto now = std::chrono::steady_clock::now();
      const bool tasks = run_tasks();
      if (ucp_worker_progress(worker_) != 0 || tasks) last_event = now;
      else if (now - last_event > kUcxSpin || stopping_.load()) break;
    }
    fds.assign(1, pollfd{event_fd_, POLLIN, 0});
    {
      std::lock_guard lock(watch_mu_);
      polled = watchers_;
    }
    for (UcxWatcher* w : polled) fds.push_back({w->watch_fd(), POLLIN | POLLRDHUP, 0});
    // Busy: events arrived between the progress and the arm; progress again. So for tasks posted
    // meanwhile (post signals the worker, but perhaps before the arm).
    if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) fds[0].fd = -1;
    // Requests in flight: sleep at most kUcxBusyPollMs. Not every step of a tcp rendezvous signals
    // the event fd (measured: a single 1 MiB block took 8-13 ms, two or three full 5 ms sleeps).
    const int sleep_ms = busy() ? kUcxBusyPollMs : kUcxPollMs;
    {
      std::lock_guard lock(task_mu_);
      if (!tasks_.empty()) fds[0].fd = -1;
    }
    ::poll(fds.data(), fds.size(), fds[0].fd < 0 ? 0 : sleep_ms);
    const auto now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < polled.size(); ++i) {
      // Watchers come and go on this thread only, also inside these calls: skip one removed meanwhile.
      if (!watching(polled[i])) continue;
      if (fds[i + 1].fd >= 0 && fds[i + 1].revents != 0) polled[i]->on_fd_ready();
      if (watching(polled[i])) polled[i]->on_tick(now);
    }
  }
}

namespace {

ucs_status_t ucx_ack_arrived(void* arg, const void* header, size_t header_length, void* data, size_t length,
                             const ucp_am_recv_param_t* param) {
  auto* sinks = static_cast<std::map<uint64_t, std::function<void(const UcxAmAck&)>>*>(arg);
  // Acks are small and sent eager; anything else is not one of ours.
  if (param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV) return UCS_OK;
  auto ack = decode_ucx_am_ack({static_cast<const std::byte*>(header), header_length},
                               {static_cast<const std::byte*>(data), length});
  if (!ack) {
    LOG_WARN("UCX: ack dropped: {}", ack.error().message());
    return UCS_OK;
  }
  // A copy: the sink may remove itself (a failed request breaks its connection).
  if (auto it = sinks->find(ack->link); it != sinks->end()) std::function<void(const UcxAmAck&)>(it->second)(*ack);
  return UCS_OK;
}

}  // namespace

Status UcxRuntime::install_am_handlers() {
  receiver_ = std::make_unique<UcxBlockReceiver>(
      worker_, [this](uint32_t region, uint64_t offset, uint64_t length) { return resolve_block(region, offset, length); });
  RECUR_RETURN_IF_ERROR(receiver_->install());
  ucp_am_handler_param_t p{};
  p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB | UCP_AM_HANDLER_PARAM_FIELD_ARG;
  p.id = kUcxAmAckId;
  p.cb = ucx_ack_arrived;
  p.arg = &ack_sinks_;
  if (ucs_status_t s = ucp_worker_set_am_recv_handler(worker_, &p); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kUnsupported, "active-message handler for acks", s));
  return ok_status();
}

uint64_t UcxRuntime::add_ack_sink(std::function<void(const UcxAmAck&)> sink) {
  if (next_link_ == 0) {
    // Random, not 1, 2, 3: a target keys its ordering state by (reply endpoint, link), and a
    // restarted client process may get an endpoint at the address of its predecessor's.
    std::random_device random;
    next_link_ = (uint64_t(random()) << 32 | random()) | 1;
  }
  const uint64_t link = next_link_++;
  ack_sinks_[link] = std::move(sink);
  return link;
}

void UcxRuntime::remove_ack_sink(uint64_t link) { ack_sinks_.erase(link); }

Result<std::byte*> UcxRuntime::resolve_block(uint32_t region, uint64_t offset, uint64_t length) {
  std::lock_guard lock(map_mu_);
  auto it = mapped_.find(region);
  if (it == mapped_.end())
    return not_found("segment {}: region {} (offset {}, length {}) is not registered", segment_name_, region, offset,
                     length);
  const Mapped& m = it->second;
  if (offset > m.length || length > m.length - offset)
    return invalid_argument("segment {}: region {}: offset {} + length {} is past its end ({} bytes)", segment_name_,
                            region, offset, length, m.length);
  return m.addr + offset;
}

Result<std::byte*> UcxRuntime::allocate(uint64_t bytes) {
  if (bytes == 0) return invalid_argument("segment {}: allocate_shared(0), expected bytes > 0", segment_name_);
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  p.address = nullptr;
  p.length = bytes;
  p.flags = UCP_MEM_MAP_ALLOCATE;
  ucp_mem_h memh = nullptr;
  if (ucs_status_t s = ucp_mem_map(context_, &p, &memh); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kIo,
                                fmt::format("allocation of {} bytes for segment {}", bytes, segment_name_), s));
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  if (ucs_status_t s = ucp_mem_query(memh, &attr); s != UCS_OK) {
    ucp_mem_unmap(context_, memh);
    return unexpected(ucx_error(ErrorCode::kInternal, "mem_query of an allocation", s));
  }
  auto* addr = static_cast<std::byte*>(attr.address);
  std::memset(addr, 0, bytes);  // the heap fallback (no shared-memory transport) is not zeroed
  std::lock_guard lock(map_mu_);
  allocations_[addr] = {attr.length, memh};
  return addr;
}

Status UcxRuntime::free(std::byte* addr) {
  std::lock_guard lock(map_mu_);
  auto it = allocations_.find(addr);
  if (it == allocations_.end())
    return not_found("segment {}: free_shared({}): not an allocate_shared address", segment_name_,
                     static_cast<void*>(addr));
  for (const auto& [id, m] : mapped_)
    if (m.memh == it->second.memh)
      return make_error(ErrorCode::kFailedPrecondition, "segment {}: free_shared({}): region {} in it is still registered",
                        segment_name_, static_cast<void*>(addr), id);
  ucp_mem_unmap(context_, it->second.memh);
  allocations_.erase(it);
  return ok_status();
}

bool UcxRuntime::owns(const std::byte* addr) {
  std::lock_guard lock(map_mu_);
  return allocations_.contains(addr);
}

const UcxRuntime::Allocation* UcxRuntime::allocation_of(const std::byte* addr, uint64_t length) const {
  auto it = allocations_.upper_bound(addr);
  if (it == allocations_.begin()) return nullptr;
  --it;
  const uint64_t at = uint64_t(addr - it->first);
  if (at > it->second.length || length > it->second.length - at) return nullptr;
  return &it->second;
}

Status UcxRuntime::map(uint32_t region, std::byte* addr, uint64_t length) {
  {
    std::lock_guard lock(map_mu_);
    if (const Allocation* a = allocation_of(addr, length)) {
      mapped_[region] = {addr, length, a->memh, false};
      return ok_status();
    }
  }
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  p.address = addr;
  p.length = length;
  ucp_mem_h memh = nullptr;
  if (ucs_status_t s = ucp_mem_map(context_, &p, &memh); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kIo, fmt::format("mem_map of segment {} region {} ({} bytes)",
                                                            segment_name_, region, length), s));
  std::lock_guard lock(map_mu_);
  mapped_[region] = {addr, length, memh, true};
  return ok_status();
}

void UcxRuntime::unmap(uint32_t region) {
  std::lock_guard lock(map_mu_);
  auto it = mapped_.find(region);
  if (it == mapped_.end()) return;
  if (it->second.own_memh) ucp_mem_unmap(context_, it->second.memh);
  mapped_.erase(it);
}

Result<std::vector<std::byte>> UcxRuntime::connect_reply() {
  UcxConnectReply reply;
  reply.worker_address = address_;
  std::lock_guard lock(map_mu_);
  for (const auto& [id, m] : mapped_) {
    void* packed = nullptr;
    size_t packed_bytes = 0;
    if (ucs_status_t s = ucp_rkey_pack(context_, m.memh, &packed, &packed_bytes); s != UCS_OK)
      return unexpected(ucx_error(ErrorCode::kInternal, fmt::format("rkey_pack of region {}", id), s));
    const auto* k = static_cast<const std::byte*>(packed);
    reply.regions.push_back({id, reinterpret_cast<uintptr_t>(m.addr), m.length, std::vector<std::byte>(k, k + packed_bytes)});
    ucp_rkey_buffer_release(packed);
  }
  return encode_ucx_connect_reply(reply);
}

bool UcxRuntime::watching(const UcxWatcher* w) {
  std::lock_guard lock(watch_mu_);
  return std::find(watchers_.begin(), watchers_.end(), w) != watchers_.end();
}

void UcxRuntime::add_watcher(UcxWatcher* w) {
  std::lock_guard lock(watch_mu_);
  watchers_.push_back(w);
  ucp_worker_signal(worker_);  // poll its fd from now on
}

void UcxRuntime::remove_watcher(UcxWatcher* w) {
  std::lock_guard lock(watch_mu_);
  std::erase(watchers_, w);
}

bool UcxRuntime::enqueue(std::function<void()> task) {
  {
    std::lock_guard lock(task_mu_);
    if (stopping_.load()) return false;
    tasks_.push_back(std::move(task));
  }
  ucp_worker_signal(worker_);  // thread-safe: wakes the progress thread's poll
  return true;
}

void UcxRuntime::post(std::function<void()> task) {
  // Callbacks of requests cancelled while the worker is destroyed may post: nobody runs it now.
  (void)enqueue(std::move(task));
}

Status UcxRuntime::run(const std::function<Status()>& task) {
  if (on_progress_thread()) return task();
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  Status result = ok_status();
  const bool queued = enqueue([&] {
    Status s = task();
    std::lock_guard lock(mu);
    result = std::move(s);
    done = true;
    cv.notify_one();
  });
  // A stopping runtime runs nothing more: waiting would never end.
  if (!queued) return make_error(ErrorCode::kFailedPrecondition, "UCX runtime: stopping, the task was not run");
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done; });
  return result;
}

bool UcxRuntime::busy() {
  if (receiver_ && receiver_->receiving() > 0) return true;
  std::lock_guard lock(watch_mu_);
  return std::any_of(watchers_.begin(), watchers_.end(), [](const UcxWatcher* w) { return w->busy(); });
}

bool UcxRuntime::run_tasks() {
  std::deque<std::function<void()>> now;
  {
    std::lock_guard lock(task_mu_);
    now.swap(tasks_);
  }
  for (auto& task : now) task();
  return !now.empty();
}

}  // namespace recur::transfer
