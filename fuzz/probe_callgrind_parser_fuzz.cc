// libFuzzer target: the callgrind output parser must return a value or an Error for any bytes,
// never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "probe/callgrind_format.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto p = recur::probe::parse_callgrind(std::string_view(reinterpret_cast<const char*>(data), size));
  if (p) (void)p->inclusive("main");
  return 0;
}
