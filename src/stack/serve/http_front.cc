#include "serve/http_front.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "core/clock.h"
#include "serve/http_framing.h"

namespace recur::serve {
namespace {

thread_local int handler_client_fd = -1;

int64_t seconds_ns(int s) { return int64_t(s) * 1'000'000'000; }

const char* reason_phrase(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

// Best effort and without blocking: the answers the loop itself gives are small, and a client
// that does not take them is being closed anyway.
void send_now(int fd, std::string_view bytes) { (void)::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT); }

std::string error_response(const ApiError& e) {
  const std::string body = e.body();
  return fmt::format("HTTP/1.1 {} {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
                     e.http_status, reason_phrase(e.http_status), body.size(), body);
}

void address_of(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage a{};
  socklen_t len = sizeof(a);
  if ((peer ? ::getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) : ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len)) != 0)
    return;
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof(text));
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof(text));
    port = ntohs(v6->sin6_port);
  }
  ip = text;
}

// One whole request, already received, for httplib's parser; responses go to the socket.
class ReceivedRequestStream final : public httplib::Stream {
 public:
  ReceivedRequestStream(int fd, std::string_view request, int write_timeout_s)
      : fd_(fd), request_(request), write_timeout_ms_(write_timeout_s * 1000) {}
  bool is_readable() const override { return pos_ < request_.size(); }
  bool is_writable() const override { return wait_writable(write_timeout_ms_); }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, request_.size() - pos_);
    std::memcpy(ptr, request_.data() + pos_, n);
    pos_ += n;
    return ssize_t(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    const int64_t deadline = now_ns() + int64_t(write_timeout_ms_) * 1'000'000;
    for (;;) {
      const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return -1;
      const int64_t left_ms = (deadline - now_ns()) / 1'000'000;
      if (left_ms <= 0 || !wait_writable(int(left_ms))) return -1;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override { address_of(fd_, true, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address_of(fd_, false, ip, port); }
  socket_t socket() const override { return fd_; }

 private:
  bool wait_writable(int timeout_ms) const {
    pollfd p{fd_, POLLOUT, 0};
    return ::poll(&p, 1, timeout_ms) > 0 && (p.revents & POLLOUT) != 0;
  }
  int fd_;
  std::string_view request_;
  size_t pos_ = 0;
  int write_timeout_ms_;
};

}  // namespace

struct HttpFront::Loop {
  enum class Phase { kIdle, kHead, kBody, kDrain };

  struct Connection {
    int fd = -1;
    std::string received;  // bytes of the request under way (and any pipelined after it)
    Phase phase = Phase::kIdle;
    int64_t deadline_ns = 0;
    std::optional<RequestHead> head;
    std::optional<ChunkedBodyScanner> chunks;
    size_t scanned = 0;  // bytes of `received` the chunk scanner has seen
  };

  Loop(HttpFront& s, const FrontOptions& o, int fd) : server(s), options(o), listen_fd(fd) {}
  HttpFront& server;
  FrontOptions options;
  int listen_fd = -1;
  int epoll_fd = -1;
  int wake_fd = -1;
  std::atomic<size_t> open{0};  // connections in the loop and on handler threads
  std::unordered_map<int, std::unique_ptr<Connection>> watched;
  std::mutex returned_mu;
  std::deque<std::unique_ptr<Connection>> returned;  // keep-alive connections back from handlers
  std::unique_ptr<httplib::ThreadPool> handlers, control;

  void close_connection(std::unique_ptr<Connection> c) {
    ::close(c->fd);
    open.fetch_sub(1);
  }

  void watch(std::unique_ptr<Connection> c) {
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.fd = c->fd;
    if (::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, c->fd, &ev) != 0) return close_connection(std::move(c));
    const int fd = c->fd;
    watched[fd] = std::move(c);
  }

  void unwatch(int fd) {
    ::epoll_ctl(epoll_fd, EPOLL_CTL_DEL, fd, nullptr);
    watched.erase(fd);
  }

  void accept_all() {
    for (;;) {
      const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        // Out of descriptors: the backlog holds the rest; pause, or the level-triggered listen
        // socket would spin this thread until a connection closes.
        if (errno == EMFILE || errno == ENFILE) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        return;
      }
      if (open.load() >= options.max_connections) {
        send_now(fd, error_response({503, fmt::format("the server has {} connections open; retry later",
                                                      options.max_connections), "server_error", "", "too_many_connections"}));
        ::close(fd);
        continue;
      }
      int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));  // SSE chunks are small
      open.fetch_add(1);
      auto c = std::make_unique<Connection>();
      c->fd = fd;
      c->deadline_ns = now_ns() + seconds_ns(options.read_timeout_s);
      watch(std::move(c));
    }
  }

  // Answers `error` and closes: first stops writing, then reads (and drops) what the client is
  // still sending for a moment, so that its kernel does not reset the connection before it read
  // the answer.
  void refuse(Connection& c, const ApiError& error) {
    send_now(c.fd, error_response(error));
    ::shutdown(c.fd, SHUT_WR);
    c.phase = Phase::kDrain;
    c.received.clear();
    c.deadline_ns = now_ns() + 1'000'000'000;
  }

  // Moves a connection through its request as bytes arrive; hands a complete request on.
  void advance(int fd) {
    Connection& c = *watched.at(fd);
    if (c.phase == Phase::kIdle && !c.received.empty()) {
      c.phase = Phase::kHead;
      c.deadline_ns = now_ns() + seconds_ns(options.read_timeout_s);
    }
    if (c.phase == Phase::kHead) {
      auto head = parse_request_head(c.received, options.max_body_bytes);
      if (!head) return refuse(c, head.error());
      if (!*head) return;
      c.head = std::move(**head);
      c.phase = Phase::kBody;
      c.scanned = c.head->head_bytes;
      if (c.head->chunked) c.chunks.emplace(options.max_body_bytes);
      if (c.head->expect_continue && (c.head->chunked || c.head->content_length > 0))
        send_now(c.fd, "HTTP/1.1 100 Continue\r\n\r\n");
    }
    if (c.phase != Phase::kBody) return;
    size_t end = c.head->head_bytes + c.head->content_length;
    if (c.chunks) {
      auto ended = c.chunks->feed(std::string_view(c.received).substr(c.scanned));
      c.scanned = c.received.size();
      if (!ended) return refuse(c, ended.error());
      if (!*ended) return;
      end = c.head->head_bytes + c.chunks->consumed();
    }
    if (c.received.size() < end) return;
    auto owned = std::move(watched.at(fd));
    unwatch(fd);
    dispatch(std::move(owned), end);
  }

  void dispatch(std::unique_ptr<Connection> c, size_t end) {
    const RequestHead& head = *c->head;
    const bool probe = head.method == "GET" && (head.path == "/health" || head.path == "/metrics");
    std::shared_ptr<Connection> held(std::move(c));
    (probe ? control : handlers)->enqueue([this, held, end] { handle(held, end); });
  }

  // On a handler thread: httplib parses and routes the request and writes the answer.
  void handle(const std::shared_ptr<Connection>& c, size_t end) {
    ReceivedRequestStream stream(c->fd, std::string_view(c->received).substr(0, end), options.write_timeout_s);
    bool client_closes = false;
    handler_client_fd = c->fd;
    const bool stop = server.stop_requested_.load();
    const bool answered = server.process_request(stream, stop, client_closes, nullptr);
    handler_client_fd = -1;
    auto next = std::make_unique<Connection>();
    next->fd = c->fd;
    next->received = c->received.substr(end);  // a pipelined request, if any
    next->deadline_ns = now_ns() + seconds_ns(options.idle_timeout_s);
    if (!answered || client_closes || stop) return close_connection(std::move(next));
    {
      std::lock_guard lock(returned_mu);
      returned.push_back(std::move(next));
    }
    const uint64_t one = 1;
    (void)::write(wake_fd, &one, sizeof(one));
  }

  void take_returned() {
    uint64_t n = 0;
    (void)::read(wake_fd, &n, sizeof(n));
    std::deque<std::unique_ptr<Connection>> back;
    {
      std::lock_guard lock(returned_mu);
      back.swap(returned);
    }
    for (auto& c : back) {
      const int fd = c->fd;
      const bool pending = !c->received.empty();
      watch(std::move(c));
      if (pending && watched.contains(fd)) advance(fd);
    }
  }

  void read_from(int fd) {
    Connection& c = *watched.at(fd);
    char buf[65536];
    for (int reads = 0; reads < 16; ++reads) {  // then the other connections' turn (level-triggered: back soon)
      const ssize_t n = ::recv(fd, buf, sizeof(buf), 0);
      if (n > 0) {
        if (c.phase != Phase::kDrain) c.received.append(buf, size_t(n));
        if (c.phase != Phase::kDrain && c.received.size() > options.max_body_bytes + 2 * kMaxRequestHeadBytes) break;
        continue;
      }
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      if (n < 0 && errno == EINTR) continue;
      // The client closed (or reset) the connection: whatever it left unfinished is dropped.
      auto gone = std::move(watched.at(fd));
      unwatch(fd);
      return close_connection(std::move(gone));
    }
    if (c.phase != Phase::kDrain) advance(fd);
  }

  void expire() {
    const int64_t now = now_ns();
    std::vector<int> due;
    for (const auto& [fd, c] : watched)
      if (c->deadline_ns <= now) due.push_back(fd);
    for (int fd : due) {
      Connection& c = *watched.at(fd);
      if (c.phase == Phase::kHead || c.phase == Phase::kBody) {
        refuse(c, {408, fmt::format("the request did not arrive within {} s (--read-timeout-s)", options.read_timeout_s),
                   "invalid_request_error", "", "request_timeout"});
        continue;
      }
      auto gone = std::move(watched.at(fd));
      unwatch(fd);
      close_connection(std::move(gone));
    }
  }

  Status run() {
    epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_fd < 0 || wake_fd < 0) return io_error("http front: epoll/eventfd: {}", std::strerror(errno));
    ::fcntl(listen_fd, F_SETFL, ::fcntl(listen_fd, F_GETFL) | O_NONBLOCK);
    for (int fd : {listen_fd, wake_fd}) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &ev);
    }
    handlers = std::make_unique<httplib::ThreadPool>(options.handler_threads);
    control = std::make_unique<httplib::ThreadPool>(options.control_threads);
    epoll_event events[256];
    while (!server.stop_requested_.load()) {  // seen within the 100 ms wait
      const int n = ::epoll_wait(epoll_fd, events, 256, 100);
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listen_fd) accept_all();
        else if (fd == wake_fd) take_returned();
        else if (watched.contains(fd)) read_from(fd);
      }
      expire();
    }
    ::close(listen_fd);
    for (auto& [fd, c] : watched) {
      ::close(fd);
      open.fetch_sub(1);
    }
    watched.clear();
    handlers->shutdown();  // waits for the requests under way (the caller cancelled their jobs)
    control->shutdown();
    for (auto& c : returned) ::close(c->fd);
    returned.clear();
    ::close(wake_fd);
    ::close(epoll_fd);
    return ok_status();
  }
};

HttpFront::HttpFront() = default;
HttpFront::~HttpFront() = default;

Status HttpFront::run(int listen_fd, const FrontOptions& options) {
  Loop loop(*this, options, listen_fd);
  return loop.run();
}

void HttpFront::stop_front() { stop_requested_.store(true); }

bool http_socket_closed(int fd) {
  pollfd p{fd, POLLRDHUP, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

bool http_client_gone() { return handler_client_fd >= 0 && http_socket_closed(handler_client_fd); }

int http_client_fd() { return handler_client_fd; }

}  // namespace recur::serve
