// Helpers shared by the trace tests (not part of the library).
#pragma once

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <zlib.h>

#include "trace/chrome_json.h"
#include "trace/event_table.h"
#include "trace/trace_io.h"

namespace recur::trace::testing {

// Every event as one line, sorted: two tables hold the same events iff these are equal.
inline std::vector<std::string> event_lines(const EventTable& t) {
  std::vector<std::string> v;
  v.reserve(t.size());
  for (size_t i = 0; i < t.size(); ++i) v.push_back(t.describe(i));
  std::sort(v.begin(), v.end());
  return v;
}

// Thread names, sort indices and drop counts, per pid/tid, sorted.
inline std::vector<std::string> track_lines(const EventTable& t) {
  std::vector<std::string> v;
  for (const Track& tr : t.tracks()) {
    v.push_back(fmt::format("{}/{} name={} sort={} dropped={}", tr.pid, tr.tid,
                            t.str(tr.thread_name),
                            tr.thread_sort_index ? std::to_string(*tr.thread_sort_index) : "-",
                            tr.dropped_events));
  }
  std::sort(v.begin(), v.end());
  return v;
}

inline PaddedBytes bytes_of(std::string_view s) {
  return PaddedBytes::copy_of(std::span(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

// One gzip member holding `text`.
inline std::vector<uint8_t> gzip_member(std::string_view text) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<uint8_t> out(deflateBound(&z, uLong(text.size())) + 32);
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = uInt(text.size());
  z.next_out = out.data();
  z.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

inline Result<EventTable> parse_json_text(std::string_view s, std::string_view name = "test.json") {
  return parse_chrome_json(name, bytes_of(s));
}

}  // namespace recur::trace::testing
