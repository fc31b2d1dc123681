// Levelled logging to stderr (stdout is reserved for results).
//
// The level comes from RECUR_LOG (error, warn, info, debug, trace) or set_log_level(); the
// default is info. Thread-safe: each line is written with one fwrite call.
#pragma once

#include <optional>
#include <string_view>

#include <fmt/format.h>

namespace recur {

enum class LogLevel { kError = 0, kWarn = 1, kInfo = 2, kDebug = 3, kTrace = 4 };

LogLevel log_level();
void set_log_level(LogLevel level);
std::optional<LogLevel> parse_log_level(std::string_view name);
void log_line(LogLevel level, std::string_view message);

template <typename... Args>
void log(LogLevel level, fmt::format_string<Args...> f, Args&&... args) {
  if (level > log_level()) return;
  log_line(level, fmt::format(f, std::forward<Args>(args)...));
}

#define RECUR_LOG_AT_(level, ...) ::recur::log(level, __VA_ARGS__)
#define LOG_ERROR(...) RECUR_LOG_AT_(::recur::LogLevel::kError, __VA_ARGS__)
#define LOG_WARN(...) RECUR_LOG_AT_(::recur::LogLevel::kWarn, __VA_ARGS__)
#define LOG_INFO(...) RECUR_LOG_AT_(::recur::LogLevel::kInfo, __VA_ARGS__)
#define LOG_DEBUG(...) RECUR_LOG_AT_(::recur::LogLevel::kDebug, __VA_ARGS__)

}  // namespace recur
