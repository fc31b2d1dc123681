// Feeds arbitrary bytes to the episode [expect] reader (agent/expect.h) as TOML text: every input
// must give an Expect or a positioned error, never a crash, a hang or an exception (the root
// cause patterns are compiled as regexes: a hostile pattern must be refused or bounded). Whatever
// parses is matched against a configuration, as the scorer does.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "loop/expect.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 4096) return 0;  // regex compilation is the cost; long inputs add nothing new
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto root = recur::gate::parse_toml(text, "expect.toml");
  if (!root) return root.error().message().empty() ? (__builtin_trap(), 0) : 0;
  recur::gate::TomlTable top(*root, "expect.toml", "the top level");
  auto sub = top.subtable("expect");
  if (!sub || !*sub) return 0;
  auto e = recur::agent::parse_expect(**sub, recur::KnobRegistry::global());
  if (!e) {
    if (e.error().message().empty()) __builtin_trap();
    return 0;
  }
  const std::map<std::string, std::string> start = {{"engine.tp", "4"}}, final_config = {{"engine.tp", "1"}};
  (void)recur::agent::match_expect(*e, start, final_config);
  return 0;
}
