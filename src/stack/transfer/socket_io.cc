#include "transfer/socket_io.h"

#include <arpa/inet.h>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace recur::transfer {

void UniqueFd::reset() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

Result<TcpAddress> parse_host_port(std::string_view text) {
  size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0)
    return invalid_argument("address '{}': expected host:port", text);
  std::string_view port_text = text.substr(colon + 1);
  int port = -1;
  auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (ec != std::errc() || end != port_text.data() + port_text.size() || port < 0 || port > 65535)
    return invalid_argument("address '{}': port '{}', expected 0..65535", text, port_text);
  return TcpAddress{std::string(text.substr(0, colon)), port, ""};
}

Result<TcpAddress> parse_tcp_segment(std::string_view text) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos) return invalid_argument("segment '{}': expected host:port/name", text);
  RECUR_ASSIGN_OR_RETURN(TcpAddress a, parse_host_port(text.substr(0, slash)));
  if (a.port == 0) return invalid_argument("segment '{}': port 0, expected the peer's listening port", text);
  a.name = std::string(text.substr(slash + 1));
  return a;
}

namespace {

Result<sockaddr_in> resolve_ipv4(const std::string& host, int port) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(uint16_t(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) == 1) return addr;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (int rc = getaddrinfo(host.c_str(), nullptr, &hints, &found); rc != 0 || found == nullptr)
    return not_found("host '{}': {}", host, gai_strerror(rc));
  addr.sin_addr = reinterpret_cast<sockaddr_in*>(found->ai_addr)->sin_addr;
  freeaddrinfo(found);
  return addr;
}

}  // namespace

void set_socket_timeouts(int fd, std::chrono::milliseconds timeout) {
  timeval tv{};
  tv.tv_sec = timeout.count() / 1000;
  tv.tv_usec = (timeout.count() % 1000) * 1000;
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
}

Result<UniqueFd> tcp_listen(const std::string& host, int port, int* bound_port) {
  RECUR_ASSIGN_OR_RETURN(sockaddr_in addr, resolve_ipv4(host, port));
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return io_error("socket: {}", std::strerror(errno));
  int one = 1;
  setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0)
    return io_error("bind {}:{}: {}", host, port, std::strerror(errno));
  if (::listen(fd.get(), 64) != 0) return io_error("listen {}:{}: {}", host, port, std::strerror(errno));
  socklen_t len = sizeof addr;
  getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len);
  if (bound_port != nullptr) *bound_port = ntohs(addr.sin_port);
  return fd;
}

Result<UniqueFd> tcp_connect(const std::string& host, int port, std::chrono::milliseconds timeout) {
  RECUR_ASSIGN_OR_RETURN(sockaddr_in addr, resolve_ipv4(host, port));
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) return io_error("socket: {}", std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    if (errno != EINPROGRESS) return io_error("connect {}:{}: {}", host, port, std::strerror(errno));
    pollfd p{fd.get(), POLLOUT, 0};
    int rc = ::poll(&p, 1, int(timeout.count()));
    if (rc == 0) return make_error(ErrorCode::kTimeout, "connect {}:{}: no answer within {} ms", host, port, timeout.count());
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (rc < 0 || err != 0) return io_error("connect {}:{}: {}", host, port, std::strerror(rc < 0 ? errno : err));
  }
  // Back to blocking: the socket timeouts bound every call.
  int flags = ::fcntl(fd.get(), F_GETFL);
  ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
  int one = 1;
  setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  set_socket_timeouts(fd.get(), timeout);
  return fd;
}

Status send_all(int fd, const void* data, size_t bytes, std::string_view what, bool more) {
  const char* p = static_cast<const char*>(data);
  while (bytes > 0) {
    ssize_t n = ::send(fd, p, bytes, MSG_NOSIGNAL | (more ? MSG_MORE : 0));
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return make_error(ErrorCode::kTimeout, "{}: send timed out with {} bytes left", what, bytes);
      return io_error("{}: send: {}", what, std::strerror(errno));
    }
    p += n;
    bytes -= size_t(n);
  }
  return ok_status();
}

Result<size_t> recv_all(int fd, void* data, size_t bytes, std::string_view what) {
  char* p = static_cast<char*>(data);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::recv(fd, p + got, bytes - got, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK)
        return make_error(ErrorCode::kTimeout, "{}: receive timed out after {} of {} bytes", what, got, bytes);
      return io_error("{}: receive: {}", what, std::strerror(errno));
    }
    got += size_t(n);
  }
  return got;
}

}  // namespace recur::transfer
