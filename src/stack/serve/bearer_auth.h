// Keys every recur HTTP process checks (docs/serve.md, "Authentication"): the public API key
// (--api-key, --api-key-file, RECUR_API_KEY) and the peer key the disaggregated roles show each
// other (--peer-key-file, RECUR_PEER_KEY). Compared in constant time; read from a file or the
// environment so that they never show in `ps`.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"

namespace httplib {
class Server;
}

namespace recur::serve {

// Compares without an early exit, so the time taken does not reveal how much of a key matched.
bool same_secret(std::string_view a, std::string_view b);

// Every route but /health (and /metrics, when `metrics_open`: a worker's, for scrapers that are
// not peers) then needs "Authorization: Bearer KEY" (401 otherwise, naming the header). An empty
// key leaves the routes open.
void require_bearer_key(httplib::Server& server, std::string key, bool metrics_open = false);

// A key from the file at `file` (when not empty; one trailing newline dropped), else from the
// environment variable `env` (when set), else `fallback`. Errors name the file: unreadable, empty,
// or more than one line.
Result<std::string> load_secret(const std::string& file, const char* env, std::string fallback);

}  // namespace recur::serve
