// The front of every recur HTTP process (docs/serve.md, "Connections"): one event-loop thread
// owns every connection while its request arrives, and hands a request to a handler thread only
// once all of it is in memory. So a client that sends slowly costs a connection and a buffer,
// never a thread; a body over --max-body (declared, or chunked and counted as it arrives) is
// refused with 413 before the rest is read; a request that does not arrive within
// --read-timeout-s is answered 408 and closed; and GET /health and GET /metrics run on threads of
// their own, so a probe answers in milliseconds however many generations hold the others.
// Idle keep-alive connections wait in the loop too, not on a thread.
//
// Handlers are httplib's (routes, pre-routing, error handler, logger, streaming providers): the
// loop feeds each complete request to httplib::Server::process_request.
#pragma once

#include <atomic>
#include <cstddef>

#include <httplib.h>

#include "core/status.h"

namespace recur::serve {

struct FrontOptions {
  size_t handler_threads = 32;     // requests handled at once (a streaming generation holds one)
  size_t control_threads = 2;      // for GET /health and GET /metrics only
  size_t max_body_bytes = 1 << 20;
  int read_timeout_s = 10;         // a request's head and body, from its first byte
  int idle_timeout_s = 5;          // a keep-alive connection between requests
  int write_timeout_s = 5;         // a client that stops reading a response
  size_t max_connections = 4096;   // beyond: 503 and close
};

class HttpFront : public httplib::Server {
 public:
  HttpFront();
  ~HttpFront() override;
  // Serves the connections `listen_fd` (bound, listening) accepts until stop_front().
  Status run(int listen_fd, const FrontOptions& options);
  void stop_front();

 private:
  struct Loop;
  friend struct Loop;
  std::atomic<bool> stop_requested_{false};
};

// Whether the client of the request this handler thread is answering has closed its connection
// (then nobody will read the answer: the handler may stop working on it). False off a handler thread.
bool http_client_gone();
// The socket of that client (-1 off a handler thread): to check from another thread while the
// handler waits (request_watch.h).
int http_client_fd();
// Whether the peer of `fd` closed or reset its side (a half-close counts: POLLRDHUP).
bool http_socket_closed(int fd);

}  // namespace recur::serve
