// libFuzzer target: safetensors headers of any shape parse or fail cleanly, and every tensor
// of a file that parses lies inside the input.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "engine/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  auto f = recur::safetensors::parse(bytes, "fuzz");
  if (!f) return 0;
  for (const auto& t : f->tensors) {
    if (t.data < bytes.data() || t.data + (t.end - t.begin) > bytes.data() + size) std::abort();
  }
  return 0;
}
