// libFuzzer target for the trace readers: arbitrary bytes go through format detection, gzip,
// the Chrome JSON reader (scanner + simdjson) and the Perfetto reader. Any result is fine;
// crashes, hangs, leaks and sanitizer reports are not. A successful parse is written back as
// Chrome JSON and read again, which must succeed.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "trace/chrome_json.h"
#include "trace/trace_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace recur::trace;
  auto r = parse_trace("fuzz", PaddedBytes::copy_of({data, size}));
  if (!r) return 0;
  std::string json = chrome_json_string(*r);
  auto back = parse_chrome_json(
      "fuzz-rewritten", PaddedBytes::copy_of({reinterpret_cast<const uint8_t*>(json.data()), json.size()}));
  if (!back) std::abort();
  return 0;
}
