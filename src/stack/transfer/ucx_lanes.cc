#include "transfer/ucx_lanes.h"

#include <set>

namespace recur::transfer {

namespace {

// Calls fn(line) for each "lane[" line of the text.
template <typename Fn>
void for_each_lane(std::string_view info, Fn fn) {
  for (size_t at = info.find("lane["); at != std::string_view::npos; at = info.find("lane[", at + 1)) {
    const size_t end = info.find('\n', at);
    fn(info.substr(at, end == std::string_view::npos ? std::string_view::npos : end - at));
  }
}

}  // namespace

std::string ucx_lane_transports(std::string_view ep_info) {
  std::set<std::string> names;
  for_each_lane(ep_info, [&](std::string_view line) {
    // "lane[0]:  3:posix/memory.0 md[2] ...": the name after the second colon.
    const size_t colon = line.find(':');
    const size_t start = colon == std::string_view::npos ? colon : line.find(':', colon + 1);
    if (start == std::string_view::npos) return;
    const size_t end = line.find(' ', start);
    names.insert(std::string(line.substr(start + 1, end == std::string_view::npos ? end : end - start - 1)));
  });
  std::string joined;
  for (const std::string& n : names) joined += (joined.empty() ? "" : ", ") + n;
  return joined.empty() ? std::string(ep_info) : joined;
}

bool ucx_lanes_have_rma(std::string_view ep_info) {
  for (size_t at = ep_info.find("put["); at != std::string_view::npos; at = ep_info.find("put[", at + 1)) {
    const size_t close = ep_info.find("]:", at);
    if (close != std::string_view::npos && close > at + 4 &&
        ep_info.substr(at + 4, close - at - 4).find_first_not_of("0123456789") == std::string_view::npos)
      return true;
  }
  return false;
}

}  // namespace recur::transfer
