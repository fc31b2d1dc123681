// The HTTP side of recur loadgen: one client per concurrent stream, each sending completions
// and timing them. Not thread-safe; one per thread.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "serve/loadgen.h"

namespace recur::serve {

class LoadgenClient {
 public:
  // url: "http://host:port".
  static Result<std::unique_ptr<LoadgenClient>> connect(const std::string& url, const std::string& api_key);
  virtual ~LoadgenClient() = default;
  // The id of the first model GET /v1/models lists.
  virtual Result<std::string> first_model() = 0;
  // POST /v1/completions with `body`, streamed when `stream` (SSE parsed chunk by chunk).
  virtual RequestSample complete(const std::string& body, bool stream) = 0;
};

}  // namespace recur::serve
