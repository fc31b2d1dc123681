// TCP plumbing for the transfer engine: an owning fd, listen/connect, whole-buffer send and
// receive with the socket's timeouts, and "host:port/name" segment addresses.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "core/status.h"

namespace recur::transfer {

class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = std::exchange(o.fd_, -1);
    }
    return *this;
  }
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  void reset();

 private:
  int fd_ = -1;
};

struct TcpAddress {
  std::string host;
  int port = 0;
  std::string name;  // segment name
};
// "host:port/name" (host a name or IPv4 address).
Result<TcpAddress> parse_tcp_segment(std::string_view text);
// "host:port" (port 0 = any).
Result<TcpAddress> parse_host_port(std::string_view text);

// A listening socket bound to host:port; *bound_port gets the port actually bound.
Result<UniqueFd> tcp_listen(const std::string& host, int port, int* bound_port);
// Connects within `timeout`; the socket gets TCP_NODELAY and send/receive timeouts of `timeout`.
Result<UniqueFd> tcp_connect(const std::string& host, int port, std::chrono::milliseconds timeout);
void set_socket_timeouts(int fd, std::chrono::milliseconds timeout);

// Sends all bytes (MSG_NOSIGNAL); a send timeout is kTimeout, a reset peer kIo. `what` names the
// peer in errors. `more`: more follows at once (MSG_MORE: a header goes out with its payload).
Status send_all(int fd, const void* data, size_t bytes, std::string_view what, bool more = false);
// Receives exactly `bytes` unless the peer closes first; returns the count received (short =
// closed). A receive timeout is kTimeout, a reset peer kIo.
Result<size_t> recv_all(int fd, void* data, size_t bytes, std::string_view what);

}  // namespace recur::transfer
