#include "serve/stop_matcher.h"

#include <algorithm>
#include <cstdint>

namespace recur::serve {
namespace {

// Bytes of an unfinished UTF-8 sequence at the end of s (0 when it ends on a boundary).
size_t incomplete_utf8_tail(std::string_view s) {
  for (size_t back = 1; back <= std::min<size_t>(3, s.size()); ++back) {
    uint8_t c = uint8_t(s[s.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // continuation byte: look further back
    size_t need = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
    return need > back ? back : 0;
  }
  return 0;
}

}  // namespace

size_t StopMatcher::held_tail() const {
  size_t held = incomplete_utf8_tail(pending_);
  for (const std::string& stop : stops_) {
    for (size_t n = std::min(stop.size() - 1, pending_.size()); n > held; --n) {
      if (std::string_view(pending_).substr(pending_.size() - n) == std::string_view(stop).substr(0, n)) {
        held = n;
        break;
      }
    }
  }
  return held;
}

std::string StopMatcher::feed(std::string_view piece) {
  if (stopped_) return {};
  pending_ += piece;
  size_t cut = std::string::npos;
  for (const std::string& stop : stops_) cut = std::min(cut, pending_.find(stop));
  if (cut != std::string::npos) {
    stopped_ = true;
    std::string out = pending_.substr(0, cut);
    pending_.clear();
    return out;
  }
  size_t keep = held_tail();
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  if (!stopped_) out.swap(pending_);
  return out;
}

}  // namespace recur::serve
