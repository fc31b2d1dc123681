// libFuzzer target: any byte string must parse to a File or to an error, never crash, hang or
// read out of bounds; a file that parses must have every tensor inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "engine/gguf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto f = recur::gguf::parse(bytes, "fuzz");
  if (!f) return 0;
  for (const auto& t : f->tensors) {
    const std::byte* end = t.data + t.bytes;
    if (t.data < bytes.data() || end > bytes.data() + size) std::abort();
    volatile std::byte sink{};
    if (t.bytes) sink = t.data[t.bytes - 1];
    (void)sink;
  }
  return 0;
}
