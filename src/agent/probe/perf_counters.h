// Hardware counters (instructions, cycles) around a callable through perf_event_open, user
// space only. Where the kernel or the VM does not expose a PMU (this VM: ENOENT) the reading
// says so in `why` and bench reports it as a note, not an error. Thread-safe: counters are
// opened per call, for the calling thread.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace recur::probe {

struct CounterReading {
  bool available = false;
  std::string why;  // when unavailable: "perf_event_open(instructions): No such file or directory"
  uint64_t instructions = 0;
  uint64_t cycles = 0;
};

CounterReading count_hardware(const std::function<void()>& fn);

}  // namespace recur::probe
