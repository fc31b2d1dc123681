#include "probe/perf_counters.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace recur::probe {
namespace {

int open_counter(uint64_t config, int group) {
  perf_event_attr attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_HARDWARE;
  attr.config = config;
  attr.disabled = group < 0 ? 1 : 0;
  attr.exclude_kernel = 1;
  attr.exclude_hv = 1;
  return int(syscall(SYS_perf_event_open, &attr, 0, -1, group, 0));
}

}  // namespace

CounterReading count_hardware(const std::function<void()>& fn) {
  CounterReading r;
  int leader = open_counter(PERF_COUNT_HW_INSTRUCTIONS, -1);
  if (leader < 0) {
    r.why = fmt::format("perf_event_open(instructions): {}", std::strerror(errno));
    return r;
  }
  int cycles = open_counter(PERF_COUNT_HW_CPU_CYCLES, leader);
  ioctl(leader, PERF_EVENT_IOC_RESET, PERF_IOC_FLAG_GROUP);
  ioctl(leader, PERF_EVENT_IOC_ENABLE, PERF_IOC_FLAG_GROUP);
  fn();
  ioctl(leader, PERF_EVENT_IOC_DISABLE, PERF_IOC_FLAG_GROUP);
  uint64_t v = 0;
  if (read(leader, &v, sizeof(v)) == ssize_t(sizeof(v))) {
    r.instructions = v;
    r.available = true;
  } else {
    r.why = fmt::format("reading the instruction counter: {}", std::strerror(errno));
  }
  if (cycles >= 0) {
    if (read(cycles, &v, sizeof(v)) == ssize_t(sizeof(v))) r.cycles = v;
    close(cycles);
  }
  close(leader);
  return r;
}

}  // namespace recur::probe
