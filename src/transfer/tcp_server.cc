#include "transfer/tcp_server.h"

#include <atomic>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include "trace/trace.h"
#include "transfer/checksum.h"
#include "transfer/frame.h"

namespace recur::transfer {
namespace {

Status tcp_send_reply(int fd, uint64_t request_id, uint16_t status, std::span<const std::byte> payload,
                      std::string_view what) {
  FrameHeader h;
  h.op = FrameOp::kReply;
  h.request_id = request_id;
  h.status = status;
  h.length = payload.size();
  h.checksum = checksum64(payload);
  FrameHeaderBytes bytes = encode_frame_header(h);
  RECUR_RETURN_IF_ERROR(send_all(fd, bytes.data(), bytes.size(), what, !payload.empty()));
  if (!payload.empty()) RECUR_RETURN_IF_ERROR(send_all(fd, payload.data(), payload.size(), what));
  return ok_status();
}

Status tcp_send_error_reply(int fd, uint64_t request_id, const Error& error, std::string_view what) {
  const std::string& m = error.message();
  return tcp_send_reply(fd, request_id, reply_status(error.code()),
                        std::span(reinterpret_cast<const std::byte*>(m.data()), m.size()), what);
}

// Receives exactly `bytes` or fails naming what was cut short.
Status tcp_recv_exact(int fd, void* data, size_t bytes, std::string_view what) {
  RECUR_ASSIGN_OR_RETURN(size_t got, recv_all(fd, data, bytes, what));
  if (got != bytes)
    return make_error(ErrorCode::kFailedPrecondition, "{}: peer closed the connection after {} of {} bytes", what, got,
                      bytes);
  return ok_status();
}

}  // namespace

TcpServer::TcpServer(UniqueFd listener, int port, std::string segment_name, const MemoryRegistry& registry,
                     std::chrono::milliseconds timeout)
    : listener_(std::move(listener)),
      port_(port),
      segment_name_(std::move(segment_name)),
      registry_(registry),
      timeout_(timeout) {}

Result<std::unique_ptr<TcpServer>> TcpServer::start(const std::string& host, int port, std::string segment_name,
                                                    const MemoryRegistry& registry, std::chrono::milliseconds timeout) {
  int bound = 0;
  RECUR_ASSIGN_OR_RETURN(UniqueFd fd, tcp_listen(host, port, &bound));
  auto server =
      std::unique_ptr<TcpServer>(new TcpServer(std::move(fd), bound, std::move(segment_name), registry, timeout));
  server->acceptor_ = std::thread([s = server.get()] { s->accept_loop(); });
  return server;
}

TcpServer::~TcpServer() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    ::shutdown(listener_.get(), SHUT_RDWR);
    for (Connection& c : connections_) ::shutdown(c.fd.get(), SHUT_RDWR);
  }
  acceptor_.join();
  for (Connection& c : connections_) c.thread.join();
}

void TcpServer::accept_loop() {
  trace::set_thread_name("kv_transfer_accept");
  for (;;) {
    pollfd p{listener_.get(), POLLIN, 0};
    int rc = ::poll(&p, 1, 100);
    std::lock_guard lock(mu_);
    if (stopping_) return;
    if (rc <= 0) continue;
    int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    set_socket_timeouts(fd, timeout_);
    int one = 1;  // replies are small: Nagle would hold them for the client's delayed ack
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // Reap connections whose peers left, so a long-lived server does not accumulate threads.
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (!it->done.load(std::memory_order_acquire)) {
        ++it;
        continue;
      }
      it->thread.join();
      it = connections_.erase(it);
    }
    Connection& c = connections_.emplace_back();
    c.fd = UniqueFd(fd);
    c.thread = std::thread([this, &c] { serve(c); });
  }
}

void TcpServer::serve(Connection& c) {
  trace::set_thread_name("kv_transfer_server");
  int fd = c.fd.get();
  std::vector<std::byte> scratch;
  for (;;) {
    bool closed = false;
    Status s = serve_one(fd, scratch, &closed);
    if (!s || closed) break;
  }
  ::shutdown(fd, SHUT_RDWR);  // the fd itself is closed when the connection is reaped
  c.done.store(true, std::memory_order_release);
}

// One request: header, payload, reply. An error return (after an error reply where possible)
// ends the connection.
Status TcpServer::serve_one(int fd, std::vector<std::byte>& scratch, bool* closed) {
  std::string what = fmt::format("segment {}: peer connection", segment_name_);
  FrameHeaderBytes raw;
  // Between requests a connection may stay idle for as long as it likes.
  size_t got = 0;
  while (got < raw.size()) {
    ssize_t n = ::recv(fd, raw.data() + got, raw.size() - got, 0);
    if (n == 0) {
      *closed = true;
      return ok_status();
    }
    if (n < 0) {
      if (errno == EINTR || ((errno == EAGAIN || errno == EWOULDBLOCK) && got == 0)) continue;
      return io_error("{}: receive: {}", what, std::strerror(errno));
    }
    got += size_t(n);
  }
  auto decoded = decode_frame_header(raw);
  if (!decoded) {
    (void)tcp_send_error_reply(fd, 0, decoded.error(), what);
    return unexpected<Error>(decoded.error());
  }
  const FrameHeader& h = *decoded;
  auto fail = [&](const Error& e) -> Status {
    (void)tcp_send_error_reply(fd, h.request_id, e, what);
    return unexpected<Error>(e);
  };
  switch (h.op) {
    case FrameOp::kHello: {
      scratch.resize(h.length);
      RECUR_RETURN_IF_ERROR(tcp_recv_exact(fd, scratch.data(), scratch.size(), what));
      if (auto v = verify_frame_payload(h, scratch); !v) return fail(v.error());
      std::string_view asked(reinterpret_cast<const char*>(scratch.data()), scratch.size());
      if (asked != segment_name_)
        return fail(Error(ErrorCode::kNotFound,
                          fmt::format("unknown segment '{}': this engine serves '{}'", asked, segment_name_)));
      std::vector<std::byte> table = encode_region_table(registry_.table());
      return tcp_send_reply(fd, h.request_id, 0, table, what);
    }
    case FrameOp::kRead: {
      RECUR_ZONE("kv_transfer.serve_read");
      zone.arg("bytes", h.length);
      auto target = registry_.resolve(h.region, h.offset, h.length);
      if (!target) return fail(target.error());
      std::span<const std::byte> data(*target, h.length);
      return tcp_send_reply(fd, h.request_id, 0, data, what);
    }
    case FrameOp::kWrite:
    case FrameOp::kStoreFlag: {
      RECUR_ZONE("kv_transfer.serve_write");
      zone.arg("bytes", h.length);
      auto target = registry_.resolve(h.region, h.offset, h.length);
      if (!target) {
        // Drain nothing: the connection closes, the client fails what it pipelined.
        return fail(target.error());
      }
      if (h.op == FrameOp::kWrite) {
        // Straight into the registered memory; a checksum mismatch is reported and the
        // connection closed (the range's contents are then undefined, and its ready flag,
        // pipelined after it, is never stored).
        RECUR_RETURN_IF_ERROR(tcp_recv_exact(fd, *target, h.length, what));
        if (auto v = verify_frame_payload(h, std::span<const std::byte>(*target, h.length)); !v)
          return fail(v.error());
      } else {
        uint64_t value = 0;
        RECUR_RETURN_IF_ERROR(tcp_recv_exact(fd, &value, sizeof value, what));
        if (auto v = verify_frame_payload(h, std::as_bytes(std::span(&value, 1))); !v) return fail(v.error());
        if (reinterpret_cast<uintptr_t>(*target) % 8 != 0)
          return fail(Error(ErrorCode::kInvalidArgument,
                            fmt::format("segment {}: store_flag at region {} offset {} is not 8-byte aligned",
                                        segment_name_, h.region, h.offset)));
        std::atomic_ref<uint64_t>(*reinterpret_cast<uint64_t*>(*target)).store(value, std::memory_order_release);
      }
      return tcp_send_reply(fd, h.request_id, 0, {}, what);
    }
    case FrameOp::kReply:
      return fail(Error(ErrorCode::kParse, fmt::format("{}: a reply frame where a request was expected", what)));
  }
  return ok_status();
}

}  // namespace recur::transfer
