// What the HTTP front (http_front.h) must know of a request before a handler thread sees it:
// where its head ends, how its body is framed and how large it is. Pure functions over the bytes
// received so far, so the front can refuse a request (413, 400, 415, 431, 501) before reading
// its body, and count a chunked body's decoded size while it arrives.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/expected.h"
#include "serve/api_error.h"

namespace recur::serve {

inline constexpr size_t kMaxRequestHeadBytes = 8192;  // httplib's own limit on a header line

struct RequestHead {
  std::string method;
  std::string path;            // without the query
  size_t head_bytes = 0;       // through the blank line that ends the head
  bool chunked = false;        // Transfer-Encoding: chunked
  size_t content_length = 0;   // when not chunked
  bool expect_continue = false;
};

// Parses the head at the start of `received`: nothing while its blank line has not arrived;
// an error (431 too long, 400 malformed, 413 a Content-Length over `max_body`, 415 a compressed
// body, 501 a transfer coding other than chunked) as soon as it is known.
expected<std::optional<RequestHead>, ApiError> parse_request_head(std::string_view received, size_t max_body);

// Scans a chunked body as it arrives (RFC 9112 7.1): feed() each new run of bytes; it says when
// the body (its last chunk and trailers) ended, and refuses (413) as soon as the decoded size
// passes `max_body`, or (400) malformed framing, naming the offset.
class ChunkedBodyScanner {
 public:
  explicit ChunkedBodyScanner(size_t max_body) : max_body_(max_body) {}
  // Scans `more` (the bytes after those fed before). True once the body ended: then `consumed()`
  // bytes of all that was fed belong to it (what follows is the next request).
  expected<bool, ApiError> feed(std::string_view more);
  size_t consumed() const { return consumed_; }
  size_t decoded() const { return decoded_; }

 private:
  enum class State { kSize, kSizeExtension, kSizeLf, kData, kDataCr, kDataLf, kTrailer, kTrailerLf, kDone };
  ApiError malformed(std::string_view what) const;
  size_t max_body_;
  State state_ = State::kSize;
  size_t consumed_ = 0;
  size_t decoded_ = 0;
  size_t chunk_left_ = 0;  // kSize: the size so far; kData: bytes still to come
  size_t line_bytes_ = 0;  // of the current size or trailer line (bounded)
  bool size_digits_ = false;
};

}  // namespace recur::serve
