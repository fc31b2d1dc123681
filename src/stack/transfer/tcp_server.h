// The TCP transport's serving side: accepts peers and applies their requests to this engine's
// registered memory (a thread per connection once its handshake succeeded; a request's reply
// goes back on the same connection, in order). The accept thread runs every connection's
// handshake (tcp_handshake.h: hello and, with a peer key, challenge and auth) without a thread
// of its own, and closes one that has not finished it within the timeout; at most
// kMaxPendingHandshakes wait at once (beyond, new connections are closed at once). A malformed frame, a range error or a checksum mismatch is answered
// with an error reply and then the connection is closed, so nothing the client pipelined after
// a failed write (a ready flag) is applied.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "transfer/memory_registry.h"
#include "transfer/socket_io.h"
#include "transfer/tcp_handshake.h"

namespace recur::transfer {

inline constexpr size_t kMaxPendingHandshakes = 64;

// Answers an authenticated peer's kUcxConnect (frame.h): the encoded ucx_wire.h reply.
using UcxConnectAnswer = std::function<Result<std::vector<std::byte>>()>;

class TcpServer {
 public:
  static Result<std::unique_ptr<TcpServer>> start(const std::string& host, int port, std::string segment_name,
                                                  const MemoryRegistry& registry, std::chrono::milliseconds timeout,
                                                  std::string peer_key = "", UcxConnectAnswer ucx_connect = {});
  ~TcpServer();  // stops accepting, closes every connection, joins the threads

  int port() const { return port_; }

 private:
  struct Connection {
    UniqueFd fd;
    std::thread thread;
    std::atomic<bool> done{false};  // its thread finished: join and drop it
  };
  TcpServer(UniqueFd listener, int port, std::string segment_name, const MemoryRegistry& registry,
            std::chrono::milliseconds timeout, std::string peer_key, UcxConnectAnswer ucx_connect);
  void accept_loop();
  void accept_one(std::list<ServerHandshake>& pending);
  void start_connection(UniqueFd fd);
  void serve(Connection& c);
  Status serve_one(int fd, bool* closed);

  UniqueFd listener_;
  int port_;
  std::string segment_name_;
  const MemoryRegistry& registry_;
  std::chrono::milliseconds timeout_;
  HandshakeConfig handshake_;
  UcxConnectAnswer ucx_connect_;  // empty: this engine serves no UCX peers
  std::mutex mu_;
  bool stopping_ = false;
  std::list<Connection> connections_;
  std::thread acceptor_;
};

}  // namespace recur::transfer
