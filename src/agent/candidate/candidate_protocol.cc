#include "candidate/candidate_protocol.h"

#include <charconv>

#include <fmt/format.h>

namespace recur::agent {

namespace {

template <typename T>
Result<T> protocol_number(std::string_view word, std::string_view what) {
  T v{};
  auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), v);
  if (ec != std::errc() || end != word.data() + word.size())
    return invalid_argument("run request: {} '{}' is not a non-negative integer", what, word);
  return v;
}

}  // namespace

std::vector<std::string> protocol_words(std::string_view line) {
  std::vector<std::string> words;
  size_t i = 0;
  while (i < line.size()) {
    const size_t j = std::min(line.find(' ', i), line.size());
    if (j > i) words.emplace_back(line.substr(i, j - i));
    i = j + 1;
  }
  return words;
}

std::string format_run_request(const RunnerRun& r) {
  std::string line = fmt::format("run {} {} {} {}", r.kernel, r.variant, r.shape, r.iters);
  for (uint64_t off : r.offsets) line += fmt::format(" {}", off);
  return line;
}

Result<RunnerRun> parse_run_request(std::string_view line) {
  std::vector<std::string> w = protocol_words(line);
  if (w.size() < 5 || w[0] != "run")
    return invalid_argument("run request '{}': expected 'run KERNEL VARIANT SHAPE ITERS OFFSET...'", line);
  RunnerRun r{.kernel = w[1], .variant = w[2], .shape = w[3]};
  RECUR_ASSIGN_OR_RETURN(r.iters, protocol_number<int64_t>(w[4], "ITERS"));
  if (r.iters < 1) return invalid_argument("run request: ITERS must be at least 1, got {}", r.iters);
  for (size_t i = 5; i < w.size(); ++i) {
    RECUR_ASSIGN_OR_RETURN(uint64_t off, protocol_number<uint64_t>(w[i], fmt::format("OFFSET {}", i - 5)));
    r.offsets.push_back(off);
  }
  return r;
}

}  // namespace recur::agent
