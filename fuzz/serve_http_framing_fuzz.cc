// The HTTP front's framing (src/stack/serve/http_framing.h) fed arbitrary bytes: a request head parses
// or is refused with a 4xx/5xx status the front sends; a chunked body fed in two pieces ends or
// is refused, never reads past what it was given, and never decodes more than the limit.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "serve/http_framing.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  constexpr size_t kMaxBody = 4096;
  auto head = recur::serve::parse_request_head(bytes, kMaxBody);
  if (!head && (head.error().http_status < 400 || head.error().http_status > 599)) std::abort();
  if (head && *head && ((*head)->head_bytes > size || (!(*head)->chunked && (*head)->content_length > kMaxBody)))
    std::abort();

  // The same bytes as a chunked body, split where the first byte says.
  const size_t cut = size == 0 ? 0 : size_t(data[0]) % (size + 1);
  recur::serve::ChunkedBodyScanner scanner(kMaxBody);
  for (std::string_view piece : {bytes.substr(0, cut), bytes.substr(cut)}) {
    auto done = scanner.feed(piece);
    if (!done) {
      if (done.error().http_status != 400 && done.error().http_status != 413) std::abort();
      break;
    }
    if (scanner.consumed() > size || scanner.decoded() > kMaxBody) std::abort();
    if (*done) break;
  }
  return 0;
}
