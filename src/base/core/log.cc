#include "core/log.h"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace recur {
namespace {

LogLevel initial_level() {
  if (const char* env = std::getenv("RECUR_LOG")) {
    if (auto level = parse_log_level(env)) return *level;
  }
  return LogLevel::kInfo;
}

std::atomic<LogLevel>& level_storage() {
  static std::atomic<LogLevel> level{initial_level()};
  return level;
}

constexpr std::string_view kLevelNames[] = {"error", "warn", "info", "debug", "trace"};

}  // namespace

LogLevel log_level() { return level_storage().load(std::memory_order_relaxed); }
void set_log_level(LogLevel level) { level_storage().store(level, std::memory_order_relaxed); }

std::optional<LogLevel> parse_log_level(std::string_view name) {
  for (int i = 0; i < 5; ++i)
    if (name == kLevelNames[i]) return static_cast<LogLevel>(i);
  return std::nullopt;
}

void log_line(LogLevel level, std::string_view message) {
  std::string line = fmt::format("[recur {}] {}\n", kLevelNames[static_cast<int>(level)], message);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

}  // namespace recur
