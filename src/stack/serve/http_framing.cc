#include "serve/http_framing.h"

#include <algorithm>
#include <cctype>
#include <charconv>

#include <fmt/format.h>

namespace recur::serve {
namespace {

constexpr size_t kMaxChunkLineBytes = 1024;  // a size line with extensions, or a trailer line

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(uint8_t(x)) == std::tolower(uint8_t(y)); });
}

ApiError head_error(int status, std::string code, std::string message) {
  return {status, std::move(message), "invalid_request_error", "", std::move(code)};
}

ApiError body_too_large(size_t max_body, std::string_view how) {
  return head_error(413, "body_too_large",
                    fmt::format("the request body ({}) is larger than the server accepts (--max-body {} bytes)", how, max_body));
}

}  // namespace

expected<std::optional<RequestHead>, ApiError> parse_request_head(std::string_view received, size_t max_body) {
  const size_t end = received.find("\r\n\r\n");
  if (end == std::string_view::npos || end + 4 > kMaxRequestHeadBytes) {
    if (received.size() < kMaxRequestHeadBytes) return std::optional<RequestHead>();
    return unexpected(head_error(431, "header_too_large",
                                 fmt::format("the request head is over {} bytes", kMaxRequestHeadBytes)));
  }
  RequestHead head;
  head.head_bytes = end + 4;
  std::string_view rest = received.substr(0, end + 2);
  const size_t line_end = rest.find("\r\n");
  const std::string_view line = rest.substr(0, line_end);
  rest.remove_prefix(line_end + 2);
  const size_t sp1 = line.find(' '), sp2 = line.rfind(' ');
  if (sp1 == std::string_view::npos || sp2 <= sp1 + 1)
    return unexpected(head_error(400, "bad_request_line",
                                 fmt::format("request line '{}': expected METHOD TARGET HTTP/1.x", line.substr(0, 100))));
  head.method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  head.path = target.substr(0, target.find('?'));
  bool has_length = false;
  while (!rest.empty()) {
    const size_t eol = rest.find("\r\n");
    const std::string_view field = rest.substr(0, eol);
    rest.remove_prefix(eol + 2);
    const size_t colon = field.find(':');
    if (colon == std::string_view::npos || colon == 0)
      return unexpected(head_error(400, "bad_header", fmt::format("header line '{}': expected NAME: VALUE",
                                                                  field.substr(0, 100))));
    const std::string_view name = field.substr(0, colon), value = trim(field.substr(colon + 1));
    if (same_name(name, "Transfer-Encoding")) {
      if (!same_name(value, "chunked"))  // what the handlers' parser (httplib) can decode, and no other
        return unexpected(head_error(501, "unsupported_transfer_encoding",
                                     fmt::format("Transfer-Encoding '{}': only chunked is supported", value)));
      head.chunked = true;
    } else if (same_name(name, "Content-Length")) {
      size_t n = 0;
      auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
      if (ec == std::errc::result_out_of_range) return unexpected(body_too_large(max_body, fmt::format("{} bytes", value)));
      if (ec != std::errc() || p != value.data() + value.size() || value.empty() || (has_length && n != head.content_length))
        return unexpected(head_error(400, "bad_content_length",
                                     fmt::format("Content-Length '{}': expected one decimal byte count", value)));
      has_length = true;
      head.content_length = n;
    } else if (same_name(name, "Content-Encoding")) {
      // A compressed body could inflate past --max-body after the check; none of our APIs needs one.
      if (!same_name(value, "identity"))
        return unexpected(head_error(415, "unsupported_content_encoding",
                                     fmt::format("Content-Encoding '{}': send the body uncompressed", value)));
    } else if (same_name(name, "Expect")) {
      head.expect_continue = same_name(value, "100-continue");
    }
  }
  if (head.chunked) head.content_length = 0;
  if (head.content_length > max_body)
    return unexpected(body_too_large(max_body, fmt::format("Content-Length {}", head.content_length)));
  return std::optional<RequestHead>(std::move(head));
}

ApiError ChunkedBodyScanner::malformed(std::string_view what) const {
  return head_error(400, "bad_chunked_body",
                    fmt::format("chunked body, byte {}: {}", consumed_, what));
}

expected<bool, ApiError> ChunkedBodyScanner::feed(std::string_view more) {
  for (size_t i = 0; i < more.size() && state_ != State::kDone;) {
    const char c = more[i];
    switch (state_) {
      case State::kSize: {
        const int digit = std::isxdigit(uint8_t(c)) ? (std::isdigit(uint8_t(c)) ? c - '0' : std::tolower(c) - 'a' + 10) : -1;
        if (digit >= 0) {
          if (chunk_left_ > (max_body_ + 1) / 16 + 1) return unexpected(body_too_large(max_body_, "a chunk's declared size"));
          chunk_left_ = chunk_left_ * 16 + size_t(digit);
          size_digits_ = true;
        } else if (c == ';' || c == ' ' || c == '\t') {
          state_ = State::kSizeExtension;
        } else if (c == '\r') {
          state_ = State::kSizeLf;
        } else {
          return unexpected(malformed(fmt::format("'{}' in a chunk size; expected hex digits and CRLF", c)));
        }
        break;
      }
      case State::kSizeExtension:
        if (c == '\r') state_ = State::kSizeLf;
        break;
      case State::kSizeLf:
        if (c != '\n' || !size_digits_) return unexpected(malformed("a chunk size line must be hex digits ending in CRLF"));
        decoded_ += chunk_left_;
        if (decoded_ > max_body_) return unexpected(body_too_large(max_body_, fmt::format("over {} bytes, chunked", max_body_)));
        state_ = chunk_left_ == 0 ? State::kTrailer : State::kData;
        line_bytes_ = 0;
        break;
      case State::kData: {
        const size_t take = std::min(chunk_left_, more.size() - i);
        chunk_left_ -= take;
        consumed_ += take;
        i += take;
        if (chunk_left_ == 0) state_ = State::kDataCr;
        continue;
      }
      case State::kDataCr:
        if (c != '\r') return unexpected(malformed("expected CRLF after a chunk's data"));
        state_ = State::kDataLf;
        break;
      case State::kDataLf:
        if (c != '\n') return unexpected(malformed("expected CRLF after a chunk's data"));
        state_ = State::kSize;
        size_digits_ = false;
        line_bytes_ = 0;
        break;
      case State::kTrailer:
        if (c == '\r') state_ = State::kTrailerLf;
        break;
      case State::kTrailerLf:
        if (c != '\n') return unexpected(malformed("expected LF after CR in the trailers"));
        state_ = line_bytes_ == 0 ? State::kDone : State::kTrailer;
        line_bytes_ = 0;
        ++consumed_;
        ++i;
        continue;
      case State::kDone:
        break;
    }
    ++consumed_;
    ++i;
    const bool in_line = state_ == State::kSize || state_ == State::kSizeExtension || state_ == State::kTrailer;
    if (in_line && ++line_bytes_ > kMaxChunkLineBytes)
      return unexpected(malformed(fmt::format("a chunk size or trailer line over {} bytes", kMaxChunkLineBytes)));
  }
  return state_ == State::kDone;
}

}  // namespace recur::serve
