// Feeds arbitrary bytes to the gate spec parser (gate/spec.h) as TOML text: every input must give
// a spec or a positioned error, never a crash, a hang or an exception. Checks that need the
// file system (a model path) see a spec path inside a folder that does not exist.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gate/spec.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto spec = recur::gate::parse_gate_spec(text, "/nonexistent-fuzz-dir/spec.toml");
  if (!spec && spec.error().message().empty()) __builtin_trap();  // errors always say something
  return 0;
}
