#include "transfer/tcp_server.h"

#include <arpa/inet.h>
#include <atomic>
#include <cerrno>
#include <fcntl.h>
#include <unistd.h>
#include <cstring>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include "core/log.h"
#include "trace/trace.h"
#include "transfer/checksum.h"
#include "transfer/frame.h"
#include "transfer/frame_io.h"

namespace recur::transfer {
namespace {

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
                     std::chrono::milliseconds timeout, std::string peer_key, UcxConnectAnswer ucx_connect)
    : listener_(std::move(listener)),
      port_(port),
      segment_name_(std::move(segment_name)),
      registry_(registry),
      timeout_(timeout),
      handshake_{segment_name_, std::move(peer_key), &registry_},
      ucx_connect_(std::move(ucx_connect)) {}

Result<std::unique_ptr<TcpServer>> TcpServer::start(const std::string& host, int port, std::string segment_name,
                                                    const MemoryRegistry& registry, std::chrono::milliseconds timeout,
                                                    std::string peer_key, UcxConnectAnswer ucx_connect) {
  int bound = 0;
  RECUR_ASSIGN_OR_RETURN(UniqueFd fd, tcp_listen(host, port, &bound));
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);  // accept never blocks the handshakes
  if (peer_key.empty())
    LOG_WARN("kv transfer: segment {} listens on {}:{} without a peer key: anyone who reaches this port can read and "
             "write its registered memory (set RECUR_PEER_KEY or --peer-key-file, or bind a private address)",
             segment_name, host, bound);
  auto server = std::unique_ptr<TcpServer>(
      new TcpServer(std::move(fd), bound, std::move(segment_name), registry, timeout, std::move(peer_key),
                    std::move(ucx_connect)));
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
  std::list<ServerHandshake> pending;  // connections still in their handshake: no thread yet
  std::vector<pollfd> fds;
  for (;;) {
    fds.assign(1, pollfd{listener_.get(), POLLIN, 0});
    for (const ServerHandshake& h : pending) fds.push_back({h.fd(), POLLIN, 0});
    int rc = ::poll(fds.data(), fds.size(), 100);
    std::lock_guard lock(mu_);
    if (stopping_) return;
    if (rc <= 0) fds.assign(fds.size(), pollfd{});
    const auto now = std::chrono::steady_clock::now();
    size_t i = 1;
    for (auto it = pending.begin(); it != pending.end(); ++i) {
      ServerHandshake::Progress p = ServerHandshake::Progress::kWaiting;
      if (fds[i].revents != 0) p = it->advance(handshake_);
      if (p == ServerHandshake::Progress::kWaiting && now >= it->deadline()) {
        LOG_WARN("kv transfer: segment {}: peer {} did not finish the handshake within {} ms: connection closed",
                 segment_name_, it->peer(), timeout_.count());
        p = ServerHandshake::Progress::kFailed;
      } else if (p == ServerHandshake::Progress::kFailed && !it->peer_closed()) {
        LOG_WARN("kv transfer: segment {}: refused peer {}: {}", segment_name_, it->peer(), it->why());
      }
      if (p == ServerHandshake::Progress::kAuthenticated) start_connection(it->take_fd());
      it = p == ServerHandshake::Progress::kWaiting ? std::next(it) : pending.erase(it);
    }
    if ((fds[0].revents & POLLIN) != 0) accept_one(pending);
  }
}

void TcpServer::accept_one(std::list<ServerHandshake>& pending) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  int fd = ::accept4(listener_.get(), reinterpret_cast<sockaddr*>(&addr), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return;
  char ip[INET_ADDRSTRLEN] = "?";
  ::inet_ntop(AF_INET, &addr.sin_addr, ip, sizeof ip);
  std::string peer = fmt::format("{}:{}", ip, ntohs(addr.sin_port));
  if (pending.size() >= kMaxPendingHandshakes) {
    LOG_WARN("kv transfer: segment {}: {} connections are already in their handshake: closed the one from {}",
             segment_name_, pending.size(), peer);
    ::close(fd);
    return;
  }
  pending.emplace_back(UniqueFd(fd), std::move(peer), std::chrono::steady_clock::now() + timeout_);
}

// A connection that finished its handshake gets its thread (blocking socket, timeouts). Called
// with mu_ held.
void TcpServer::start_connection(UniqueFd fd) {
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  set_socket_timeouts(fd.get(), timeout_);
  int one = 1;  // replies are small: Nagle would hold them for the client's delayed ack
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
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
  c.fd = std::move(fd);
  c.thread = std::thread([this, &c] { serve(c); });
}

void TcpServer::serve(Connection& c) {
  trace::set_thread_name("kv_transfer_server");
  int fd = c.fd.get();
  for (;;) {
    bool closed = false;
    Status s = serve_one(fd, &closed);
    if (!s || closed) break;
  }
  ::shutdown(fd, SHUT_RDWR);  // the fd itself is closed when the connection is reaped
  c.done.store(true, std::memory_order_release);
}

// One request: header, payload, reply. An error return (after an error reply where possible)
// ends the connection.
Status TcpServer::serve_one(int fd, bool* closed) {
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
    (void)send_error_reply(fd, 0, decoded.error(), what);
    return unexpected<Error>(decoded.error());
  }
  const FrameHeader& h = *decoded;
  auto fail = [&](const Error& e) -> Status {
    (void)send_error_reply(fd, h.request_id, e, what);
    return unexpected<Error>(e);
  };
  switch (h.op) {
    case FrameOp::kRead: {
      RECUR_ZONE("kv_transfer.serve_read");
      zone.arg("bytes", h.length);
      auto target = registry_.resolve(h.region, h.offset, h.length);
      if (!target) return fail(target.error());
      std::span<const std::byte> data(*target, h.length);
      return send_frame(fd, FrameOp::kReply, h.request_id, 0, data, what);
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
      return send_frame(fd, FrameOp::kReply, h.request_id, 0, {}, what);
    }
    case FrameOp::kUcxConnect: {
      // Past the handshake: only a key holder gets the worker address and the remote keys.
      if (!ucx_connect_)
        return fail(Error(ErrorCode::kUnsupported,
                          fmt::format("segment {} serves no UCX peers (its engine was created without ucx, or this "
                                      "recur was built without UCX)", segment_name_)));
      auto reply = ucx_connect_();
      if (!reply) return fail(reply.error());
      return send_frame(fd, FrameOp::kReply, h.request_id, 0, *reply, what);
    }
    case FrameOp::kHello:
    case FrameOp::kChallenge:
    case FrameOp::kAuth:
      return fail(Error(ErrorCode::kParse, fmt::format("{}: a handshake frame after the handshake", what)));
    case FrameOp::kReply:
      return fail(Error(ErrorCode::kParse, fmt::format("{}: a reply frame where a request was expected", what)));
  }
  return ok_status();
}

}  // namespace recur::transfer
