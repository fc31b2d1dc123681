// Request bodies of /v1/completions and /v1/chat/completions, fed arbitrary bytes: parsing must
// return a request or an OpenAI error with a 4xx status, and the error body must serialize.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "serve/chat_template.h"
#include "serve/openai_json.h"
#include "serve/request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view body(reinterpret_cast<const char*>(data), size);
  for (auto parse : {recur::serve::parse_completion_request, recur::serve::parse_chat_request}) {
    auto r = parse(body);
    if (!r) {
      if (r.error().http_status < 400 || r.error().http_status > 499) std::abort();
      (void)r.error().body();
      continue;
    }
    if (r->kind == recur::serve::CompletionRequest::Kind::kChat) (void)recur::serve::render_chat_prompt(r->messages);
    (void)recur::serve::sse_event(recur::serve::usage_chunk({r->kind, "x", 0, r->model}, {1, 1}));
  }
  return 0;
}
