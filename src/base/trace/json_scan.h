// JsonScanner: finds where JSON values and batches of array elements end without parsing
// them, so the Chrome reader can hand simdjson one bounded batch at a time.
//
// It classifies 64-byte blocks with SSE2 (quotes, backslashes, brackets), resolves escapes and
// in-string state with the carry-less bit tricks simdjson's stage 1 uses, and counts bracket
// depth only outside strings: several GB/s. The buffer must be readable 64 bytes past its end
// (PaddedBytes). Positions are byte offsets. Not thread-safe per instance; stateless otherwise.
#pragma once

#include <cstddef>
#include <cstdint>

namespace recur::trace {

class JsonScanner {
 public:
  JsonScanner(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  enum class Stop {
    kElementEnd,  // a bracket closed an element at depth 0; pos is just past it
    kContainerEnd,  // a ']' or '}' closed the enclosing container; pos is at it
    kEof,           // input ended first
  };
  struct Scan {
    Stop stop;
    size_t pos;
    size_t last_element_end;  // just past the last element end seen (0 if none)
    bool eof_in_string;       // for kEof: the input ended inside a string
  };

  // Scans from `start` (outside any string, inside an array or object whose elements begin at
  // depth 0) to the first element end at or after `min_end`, or to the container's end.
  Scan scan(size_t start, size_t min_end) const;

  // The end (one past) of the value starting at `pos` (not whitespace), or size() + 1 if it is
  // truncated. Strings, scalars, arrays and objects.
  size_t value_end(size_t pos) const;

  size_t skip_ws(size_t pos) const {
    while (pos < size_ && (data_[pos] == ' ' || data_[pos] == '\n' || data_[pos] == '\r' ||
                           data_[pos] == '\t')) {
      ++pos;
    }
    return pos;
  }
  // One past the closing quote of the string whose opening quote is at `pos`, or size()+1.
  size_t string_end(size_t pos) const;
  size_t size() const { return size_; }

 private:
  const uint8_t* data_;
  size_t size_;
};

}  // namespace recur::trace
