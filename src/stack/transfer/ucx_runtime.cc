#include "transfer/ucx_runtime.h"

#include <poll.h>

#include <algorithm>

#include "core/log.h"
#include "trace/trace.h"
#include "transfer/ucx_wire.h"

namespace recur::transfer {

// The progress thread's longest sleep: bounds how late it notices a deadline or a stop, and a
// completion whose event UCX did not signal.
constexpr int kUcxPollMs = 5;

Error ucx_error(ErrorCode code, std::string_view what, ucs_status_t status) {
  return Error(code, fmt::format("UCX {}: {}", what, ucs_status_string(status)));
}

Result<std::unique_ptr<UcxRuntime>> UcxRuntime::create(const std::string& segment_name) {
  auto rt = std::unique_ptr<UcxRuntime>(new UcxRuntime());
  rt->segment_name_ = segment_name;
  ucp_config_t* config = nullptr;
  if (ucs_status_t s = ucp_config_read(nullptr, nullptr, &config); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kUnsupported, "config (UCX_* environment)", s));
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED | UCP_PARAM_FIELD_NAME;
  params.features = UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
  params.mt_workers_shared = 0;
  params.name = rt->segment_name_.c_str();
  ucs_status_t s = ucp_init(&params, config, &rt->context_);
  ucp_config_release(config);
  if (s != UCS_OK) return unexpected(ucx_error(ErrorCode::kUnsupported, "init (no usable transport in UCX_TLS?)", s));
  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_MULTI;
  if (s = ucp_worker_create(rt->context_, &wp, &rt->worker_); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kUnsupported, "worker create", s));
  ucp_worker_attr_t attr{};
  attr.field_mask = UCP_WORKER_ATTR_FIELD_THREAD_MODE;
  if (ucp_worker_query(rt->worker_, &attr) == UCS_OK && attr.thread_mode != UCS_THREAD_MODE_MULTI)
    return make_error(ErrorCode::kUnsupported, "UCX worker: this libucx lacks multi-thread support (thread mode {})",
                      int(attr.thread_mode));
  if (s = ucp_worker_get_efd(rt->worker_, &rt->event_fd_); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kUnsupported, "worker event fd", s));
  rt->progress_ = std::thread([p = rt.get()] { p->progress_loop(); });
  return rt;
}

UcxRuntime::~UcxRuntime() {
  stopping_.store(true);
  if (worker_ != nullptr) ucp_worker_signal(worker_);
  if (progress_.joinable()) progress_.join();
  for (auto& [id, m] : mapped_) ucp_mem_unmap(context_, m.memh);
  if (worker_ != nullptr) ucp_worker_destroy(worker_);
  if (context_ != nullptr) ucp_cleanup(context_);
}

void UcxRuntime::progress_loop() {
  trace::set_thread_name("kv_transfer_ucx");
  std::vector<pollfd> fds;
  std::vector<UcxWatcher*> polled;
  while (!stopping_.load()) {
    while (ucp_worker_progress(worker_) != 0) {
    }
    fds.assign(1, pollfd{event_fd_, POLLIN, 0});
    {
      std::lock_guard lock(watch_mu_);
      polled = watchers_;
    }
    for (UcxWatcher* w : polled) fds.push_back({w->watch_fd(), POLLIN | POLLRDHUP, 0});
    // Busy: events arrived between the progress and the arm; progress again.
    if (ucp_worker_arm(worker_) == UCS_ERR_BUSY) fds[0].fd = -1;
    ::poll(fds.data(), fds.size(), fds[0].fd < 0 ? 0 : kUcxPollMs);
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(watch_mu_);  // a watcher removed meanwhile is not called
    for (size_t i = 0; i < polled.size(); ++i) {
      if (std::find(watchers_.begin(), watchers_.end(), polled[i]) == watchers_.end()) continue;
      if (fds[i + 1].fd >= 0 && fds[i + 1].revents != 0) polled[i]->on_fd_ready();
      polled[i]->on_tick(now);
    }
  }
}

Status UcxRuntime::map(uint32_t region, std::byte* addr, uint64_t length) {
  ucp_mem_map_params_t p{};
  p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
  p.address = addr;
  p.length = length;
  ucp_mem_h memh = nullptr;
  if (ucs_status_t s = ucp_mem_map(context_, &p, &memh); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kIo, fmt::format("mem_map of segment {} region {} ({} bytes)",
                                                            segment_name_, region, length), s));
  std::lock_guard lock(map_mu_);
  mapped_[region] = {addr, length, memh};
  return ok_status();
}

void UcxRuntime::unmap(uint32_t region) {
  std::lock_guard lock(map_mu_);
  auto it = mapped_.find(region);
  if (it == mapped_.end()) return;
  ucp_mem_unmap(context_, it->second.memh);
  mapped_.erase(it);
}

Result<std::vector<std::byte>> UcxRuntime::connect_reply() {
  UcxConnectReply reply;
  ucp_address_t* address = nullptr;
  size_t address_bytes = 0;
  if (ucs_status_t s = ucp_worker_get_address(worker_, &address, &address_bytes); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kInternal, "worker address", s));
  const auto* a = reinterpret_cast<const std::byte*>(address);
  reply.worker_address.assign(a, a + address_bytes);
  ucp_worker_release_address(worker_, address);
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

void UcxRuntime::add_watcher(UcxWatcher* w) {
  std::lock_guard lock(watch_mu_);
  watchers_.push_back(w);
  ucp_worker_signal(worker_);  // poll its fd from now on
}

void UcxRuntime::remove_watcher(UcxWatcher* w) {
  std::lock_guard lock(watch_mu_);
  std::erase(watchers_, w);
}

ucs_status_t UcxRuntime::wait(ucs_status_ptr_t request, std::chrono::steady_clock::time_point deadline) {
  if (request == nullptr) return UCS_OK;
  if (UCS_PTR_IS_ERR(request)) return UCS_PTR_STATUS(request);
  ucs_status_t s = UCS_INPROGRESS;
  for (;;) {
    ucp_worker_progress(worker_);
    s = ucp_request_check_status(request);
    if (s != UCS_INPROGRESS) break;
    if (std::chrono::steady_clock::now() >= deadline) {
      s = UCS_ERR_TIMED_OUT;  // freed below: UCX releases it once it ends (the caller closes the endpoint)
      break;
    }
  }
  ucp_request_free(request);
  return s;
}

}  // namespace recur::transfer
