#include "transfer/ucx_peer.h"

#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <thread>
#include <vector>

#include "core/log.h"
#include "transfer/frame_io.h"
#include "transfer/ucx_wire.h"

namespace recur::transfer {
namespace {

// What a UCX callback needs: who to tell, and for a flag the 8 bytes being put (UCX may read
// them after ucp_put_nbx returns, while the caller's source may already hold the next value).
struct UcxTicket {
  UcxPeer* peer = nullptr;
  uint64_t id = 0;
  uint64_t flag_value = 0;
};

void ucx_send_done(void* request, ucs_status_t status, void* user_data) {
  auto* t = static_cast<UcxTicket*>(user_data);
  t->peer->on_done(t->id, status);
  ucp_request_free(request);
  delete t;
}

void ucx_free_request(void* request, ucs_status_t, void*) { ucp_request_free(request); }

const char* ucx_op_name(FrameOp op) {
  return op == FrameOp::kRead ? "read" : op == FrameOp::kWrite ? "write" : "store_flag";
}

}  // namespace

UcxPeer::UcxPeer(UcxRuntime& runtime, TcpAddress address, std::chrono::milliseconds timeout, std::string peer_key)
    : runtime_(runtime),
      address_(std::move(address)),
      label_(fmt::format("ucx://{}:{}/{}", address_.host, address_.port, address_.name)),
      timeout_(timeout),
      peer_key_(std::move(peer_key)) {}

Result<std::unique_ptr<UcxPeer>> UcxPeer::connect(UcxRuntime& runtime, const TcpAddress& address,
                                                  std::chrono::milliseconds timeout, std::string peer_key) {
  auto peer = std::unique_ptr<UcxPeer>(new UcxPeer(runtime, address, timeout, std::move(peer_key)));
  {
    std::lock_guard lock(peer->conn_mu_);
    RECUR_RETURN_IF_ERROR(peer->reconnect());
  }
  runtime.add_watcher(peer.get());
  return peer;
}

UcxPeer::~UcxPeer() {
  runtime_.remove_watcher(this);
  break_connection(Error(ErrorCode::kFailedPrecondition, fmt::format("segment {} closed", label_)));
  // Callbacks of cancelled requests still name this peer: let them run first.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (outstanding_.load() > 0 && std::chrono::steady_clock::now() < until) ucp_worker_progress(runtime_.worker());
}

Status UcxPeer::reconnect() {
  auto fd = tcp_connect(address_.host, address_.port, timeout_);
  if (!fd)
    return make_error(fd.error().code() == ErrorCode::kTimeout ? ErrorCode::kTimeout : ErrorCode::kFailedPrecondition,
                      "peer gone: {}: {}", label_, fd.error().message());
  // The address and keys come only over an authenticated connection.
  RECUR_RETURN_IF_ERROR(tcp_hello(fd->get(), address_.name, label_, peer_key_));
  RECUR_RETURN_IF_ERROR(send_frame(fd->get(), FrameOp::kUcxConnect, 0, 0, {}, label_));
  RECUR_ASSIGN_OR_RETURN(HandshakeFrame answer, receive_handshake_frame(fd->get(), label_));
  if (answer.header.op != FrameOp::kReply)
    return parse_error("{}: ucx_connect answered with a {} frame", label_, int(answer.header.op));
  auto reply = decode_ucx_connect_reply(answer.payload);
  if (!reply) return unexpected<Error>(reply.error().with_context(label_));
  ucp_ep_params_t p{};
  p.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE;
  p.address = reinterpret_cast<const ucp_address_t*>(reply->worker_address.data());
  // Not UCP_ERR_HANDLING_MODE_PEER: in UCX 1.13 it rules out the shared-memory transports (they
  // cannot detect a dead peer), leaving TCP. The control connection tells us instead.
  p.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  ucp_ep_h ep = nullptr;
  if (ucs_status_t s = ucp_ep_create(runtime_.worker(), &p, &ep); s != UCS_OK)
    return unexpected(ucx_error(ErrorCode::kFailedPrecondition, fmt::format("endpoint to {}", label_), s));
  std::map<uint32_t, RemoteRegion> regions;
  for (const UcxRegionKey& r : reply->regions) {
    ucp_rkey_h rkey = nullptr;
    if (ucs_status_t s = ucp_ep_rkey_unpack(ep, r.rkey.data(), &rkey); s != UCS_OK) {
      for (auto& [id, done] : regions) ucp_rkey_destroy(done.rkey);
      ucp_request_param_t close{};
      close.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
      close.flags = UCP_EP_CLOSE_FLAG_FORCE;
      (void)runtime_.wait(ucp_ep_close_nbx(ep, &close), std::chrono::steady_clock::now() + timeout_);
      return unexpected(ucx_error(ErrorCode::kFailedPrecondition,
                                  fmt::format("remote key of {} region {}", label_, r.id), s));
    }
    regions[r.id] = {r.base, r.length, rkey};
  }
  request_error_.store(UCS_OK);
  ep_ = ep;
  regions_ = std::move(regions);
  control_ = std::move(*fd);
  control_fd_.store(control_.get());
  return ok_status();
}

void UcxPeer::break_connection(const Error& why) {
  {
    std::lock_guard conn(conn_mu_);
    if (ep_ != nullptr) {
      for (auto& [id, r] : regions_) ucp_rkey_destroy(r.rkey);
      regions_.clear();
      // Forced: the peer may be gone; outstanding requests end (with an error) through their callbacks.
      ucp_request_param_t close{};
      close.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS | UCP_OP_ATTR_FIELD_CALLBACK;
      close.flags = UCP_EP_CLOSE_FLAG_FORCE;
      close.cb.send = ucx_free_request;
      ucs_status_ptr_t closing = ucp_ep_close_nbx(ep_, &close);
      (void)closing;  // freed by its callback, or already done
      ep_ = nullptr;
    }
    control_fd_.store(-1);
    control_.reset();
  }
  std::map<uint64_t, InFlight> failed;
  {
    std::lock_guard lock(mu_);
    failed.swap(in_flight_);
  }
  for (auto& [id, f] : failed)
    fail(f.ref, Error(why.code(), fmt::format("{}: {}", where(f.op, f.region, f.offset, f.length), why.message())));
}

void UcxPeer::fail(const RequestRef& ref, const Error& why) {
  ref.batch->mark_segment_failed(ref.segment);
  ref.batch->fail(ref.index, why);
}

std::string UcxPeer::where(FrameOp op, uint32_t region, uint64_t offset, uint64_t length) const {
  return fmt::format("{}: {} region {} offset {} length {}", label_, ucx_op_name(op), region, offset, length);
}

Result<std::pair<uint64_t, ucp_rkey_h>> UcxPeer::resolve(uint32_t region, uint64_t offset, uint64_t length) {
  auto it = regions_.find(region);
  if (it == regions_.end())
    return not_found("segment {}: region {} (offset {}, length {}) is not registered", address_.name, region, offset,
                     length);
  const RemoteRegion& r = it->second;
  if (offset > r.length || length > r.length - offset)
    return invalid_argument("segment {}: region {}: offset {} + length {} is past its end ({} bytes)", address_.name,
                            region, offset, length, r.length);
  return std::pair(r.base + offset, r.rkey);
}

void UcxPeer::send(const RequestRef& ref, FrameOp op, uint32_t region, uint64_t offset, std::byte* local,
                   uint64_t length) {
  std::lock_guard conn(conn_mu_);
  if (ep_ == nullptr) {
    if (Status s = reconnect(); !s) return fail(ref, s.error());
  }
  auto target = resolve(region, offset, length);
  if (!target && target.error().code() == ErrorCode::kNotFound) {
    // The peer may have registered the region after our table was made: ask once more.
    conn_mu_.unlock();
    break_connection(Error(ErrorCode::kFailedPrecondition, "reconnecting for a newer region table"));
    conn_mu_.lock();
    if (ep_ == nullptr) {
      if (Status s = reconnect(); !s) return fail(ref, s.error());
    }
    target = resolve(region, offset, length);
  }
  if (!target) return fail(ref, target.error());
  const auto [remote, rkey] = *target;
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  if (op == FrameOp::kStoreFlag) {
    // The flag publishes the block: every earlier write of this peer must be at the target first.
    ucp_request_param_t flush{};
    ucs_status_t s = runtime_.wait(ucp_ep_flush_nbx(ep_, &flush), deadline);
    if (s != UCS_OK) {
      const Error why = s == UCS_ERR_TIMED_OUT
                            ? Error(ErrorCode::kTimeout, fmt::format("peer gone: the writes before this flag did not "
                                                                     "complete within {} ms", timeout_.count()))
                            : ucx_error(ErrorCode::kFailedPrecondition, "peer gone: flush", s);
      conn_mu_.unlock();
      break_connection(why);
      conn_mu_.lock();
      return fail(ref, Error(why.code(), fmt::format("{}: {}", where(op, region, offset, length), why.message())));
    }
  }
  uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    id = next_id_++;
    in_flight_[id] = {ref, op, region, offset, length, deadline};
  }
  auto* ticket = new UcxTicket{this, id, 0};
  ucp_request_param_t p{};
  p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
  p.cb.send = ucx_send_done;
  p.user_data = ticket;
  outstanding_.fetch_add(1);
  ucs_status_ptr_t request = nullptr;
  if (op == FrameOp::kRead) {
    request = ucp_get_nbx(ep_, local, length, remote, rkey, &p);  // complete = the bytes are here
  } else {
    // A put completes locally (the source may be reused), not at the target: the flush after it
    // completes once the bytes are in the peer's memory, and only then does the request.
    const void* source = local;
    if (op == FrameOp::kStoreFlag) {
      ticket->flag_value = std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(local)).load(std::memory_order_acquire);
      source = &ticket->flag_value;  // lives until the flush's callback
    }
    ucp_request_param_t put{};
    ucs_status_ptr_t put_request = ucp_put_nbx(ep_, source, length, remote, rkey, &put);
    if (UCS_PTR_IS_PTR(put_request)) ucp_request_free(put_request);  // UCX releases it when done
    request = UCS_PTR_IS_ERR(put_request) ? put_request : ucp_ep_flush_nbx(ep_, &p);
  }
  if (UCS_PTR_IS_PTR(request)) return;  // ucx_send_done reports it
  // Done (or refused) at once: no callback will come.
  on_done(id, UCS_PTR_STATUS(request));
  delete ticket;
}

void UcxPeer::on_done(uint64_t id, ucs_status_t status) {
  InFlight f;
  {
    std::lock_guard lock(mu_);
    auto it = in_flight_.find(id);
    if (it != in_flight_.end()) {
      f = std::move(it->second);
      in_flight_.erase(it);
    }
  }
  if (f.ref.batch != nullptr) {
    if (status == UCS_OK) {
      f.ref.batch->complete(f.ref.index, f.length);
    } else {
      if (request_error_.load() == UCS_OK) request_error_.store(status);  // the progress thread breaks it
      fail(f.ref, ucx_error(ErrorCode::kFailedPrecondition,
                            fmt::format("{}: peer gone: {}", where(f.op, f.region, f.offset, f.length), ucx_op_name(f.op)),
                            status));
    }
  }
  outstanding_.fetch_sub(1);
}

void UcxPeer::on_fd_ready() {
  char byte = 0;
  const int fd = control_fd_.load();
  if (fd < 0) return;
  ssize_t n = ::recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
  // The server says nothing after the connect reply: data, a close or a reset all mean it is gone.
  break_connection(Error(ErrorCode::kFailedPrecondition, n == 0 ? "peer gone: it closed the connection"
                                                                : "peer gone: its control connection broke"));
}

void UcxPeer::on_tick(std::chrono::steady_clock::time_point now) {
  if (ucs_status_t s = ucs_status_t(request_error_.load()); s != UCS_OK) {
    request_error_.store(UCS_OK);
    return break_connection(ucx_error(ErrorCode::kFailedPrecondition, "peer gone: a request failed", s));
  }
  bool late = false;
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, f] : in_flight_) late = late || f.deadline <= now;
  }
  if (late)
    break_connection(Error(ErrorCode::kTimeout, fmt::format("no completion within {} ms", timeout_.count())));
}

void UcxPeer::drain() {
  for (;;) {
    {
      std::lock_guard lock(mu_);
      if (in_flight_.empty()) return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

std::string UcxPeer::transports() {
  std::lock_guard conn(conn_mu_);
  if (ep_ == nullptr) return "(not connected)";
  char* text = nullptr;
  size_t bytes = 0;
  FILE* out = open_memstream(&text, &bytes);
  if (out == nullptr) return "?";
  ucp_ep_print_info(ep_, out);
  std::fclose(out);
  // Lines like "#   lane[0]:  3:cma/memory.0 md[2] ... rma_bw#0": keep the transport/device names.
  std::set<std::string> names;
  std::string all(text, bytes);
  std::free(text);
  for (size_t at = all.find("lane["); at != std::string::npos; at = all.find("lane[", at + 1)) {
    size_t colon = all.find(':', at);
    size_t start = all.find(':', colon + 1);
    if (colon == std::string::npos || start == std::string::npos) break;
    size_t end = all.find(' ', start);
    names.insert(all.substr(start + 1, end - start - 1));
  }
  std::string joined;
  for (const std::string& n : names) joined += (joined.empty() ? "" : ", ") + n;
  return joined.empty() ? all : joined;
}

}  // namespace recur::transfer
