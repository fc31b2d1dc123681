// Turns generated pieces into text that is safe to send: it cuts the output at the first stop
// sequence (which is never sent) and holds back a tail that could still become one, or that ends
// in an incomplete UTF-8 character (a byte token can split one), until the next piece decides.
// One per sequence; not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace recur::serve {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  // Adds a piece; returns the text that may be sent now. After a stop sequence matched, stopped()
  // is true and later pieces are ignored.
  std::string feed(std::string_view piece);
  // At the end of generation: whatever was held back (nothing once stopped).
  std::string flush();
  bool stopped() const { return stopped_; }

 private:
  // Bytes at the end of pending_ that must wait: the longest suffix that is a proper prefix of
  // a stop sequence, or an unfinished UTF-8 character.
  size_t held_tail() const;

  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
};

}  // namespace recur::serve
