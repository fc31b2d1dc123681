// The TCP transport's serving side: accepts peers and applies their requests to this engine's
// registered memory (a thread per connection; a request's reply goes back on the same
// connection, in order). A malformed frame, a range error or a checksum mismatch is answered
// with an error reply and then the connection is closed, so nothing the client pipelined after
// a failed write (a ready flag) is applied.
#pragma once

#include <atomic>
#include <chrono>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/status.h"
#include "transfer/memory_registry.h"
#include "transfer/socket_io.h"

namespace recur::transfer {

class TcpServer {
 public:
  static Result<std::unique_ptr<TcpServer>> start(const std::string& host, int port, std::string segment_name,
                                                  const MemoryRegistry& registry, std::chrono::milliseconds timeout);
  ~TcpServer();  // stops accepting, closes every connection, joins the threads

  int port() const { return port_; }

 private:
  struct Connection {
    UniqueFd fd;
    std::thread thread;
    std::atomic<bool> done{false};  // its thread finished: join and drop it
  };
  TcpServer(UniqueFd listener, int port, std::string segment_name, const MemoryRegistry& registry,
            std::chrono::milliseconds timeout);
  void accept_loop();
  void serve(Connection& c);
  Status serve_one(int fd, std::vector<std::byte>& scratch, bool* closed);

  UniqueFd listener_;
  int port_;
  std::string segment_name_;
  const MemoryRegistry& registry_;
  std::chrono::milliseconds timeout_;
  std::mutex mu_;
  bool stopping_ = false;
  std::list<Connection> connections_;
  std::thread acceptor_;
};

}  // namespace recur::transfer
