#include "serve/request_watch.h"

#include <algorithm>

#include "core/clock.h"
#include "serve/http_front.h"

namespace recur::serve {

RequestDeadline request_deadline(int64_t arrival_ns, int server_limit_s, std::optional<double> requested_s) {
  const double seconds = std::min(double(server_limit_s), requested_s.value_or(double(server_limit_s)));
  return {seconds, arrival_ns + int64_t(seconds * 1e9)};
}

ApiError deadline_passed_error(const RequestDeadline& deadline) {
  return {408, fmt::format("the request ran past its deadline of {:g} s (the request's 'timeout', at most "
                           "--request-timeout-s) and was cancelled", deadline.seconds),
          "invalid_request_error", "timeout", "request_timeout"};
}

ApiError client_closed_error() {
  return {499, "the client closed the connection: the generation was cancelled", "invalid_request_error", "",
          "client_closed"};
}

std::optional<ApiError> RequestWatch::check() const {
  if (client_fd >= 0 && http_socket_closed(client_fd)) return client_closed_error();
  if (now_ns() >= deadline.at_ns) return deadline_passed_error(deadline);
  return std::nullopt;
}

}  // namespace recur::serve
