// What a generation request waits under, in every role: its deadline (--request-timeout-s
// after arrival, or sooner when the request's "timeout" asks) and its client's connection. A
// waiting handler checks both at a bounded interval, even while no text arrives, and gives the
// request up with one of these errors: 408 request_timeout, or 499 client_closed (which nobody
// reads: it is counted and logged).
#pragma once

#include <cstdint>
#include <optional>

#include "serve/api_error.h"

namespace recur::serve {

struct RequestDeadline {
  double seconds = 0;
  int64_t at_ns = 0;
};
RequestDeadline request_deadline(int64_t arrival_ns, int server_limit_s, std::optional<double> requested_s);

ApiError deadline_passed_error(const RequestDeadline& deadline);
ApiError client_closed_error();
inline bool is_client_closed(const ApiError& e) { return e.code == "client_closed"; }

// A request's deadline and its client's socket (http_client_fd(): the handler thread's), checked
// from any thread while the handler waits (the socket stays open until the handler returns).
struct RequestWatch {
  int client_fd = -1;
  RequestDeadline deadline;
  // The reason to give the request up now, if any (the client first).
  std::optional<ApiError> check() const;
};

}  // namespace recur::serve
