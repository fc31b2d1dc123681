// Helpers for the transfer tests: unique segment names, byte patterns, a pipe to step a forked
// peer process, and a batch runner.
#pragma once

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "transfer/transfer_engine.h"

namespace recur::transfer::testing {

// ctest runs each test in its own process, several at once: names carry the pid.
inline std::string unique_segment(const std::string& stem) { return fmt::format("t-{}-{}", stem, ::getpid()); }

inline void fill_pattern(void* dst, size_t bytes, uint64_t seed) {
  auto* p = static_cast<uint8_t*>(dst);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 12345;
  for (size_t i = 0; i < bytes; ++i) {
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    p[i] = uint8_t(x >> 56);
  }
}
inline bool has_pattern(const void* src, size_t bytes, uint64_t seed) {
  std::vector<uint8_t> want(bytes);
  fill_pattern(want.data(), bytes, seed);
  return std::memcmp(want.data(), src, bytes) == 0;
}

// A one-way channel of uint64 values between a parent and a forked child.
class TestPipe {
 public:
  TestPipe() { EXPECT_EQ(::pipe(fds_), 0); }
  ~TestPipe() {
    ::close(fds_[0]);
    ::close(fds_[1]);
  }
  void send(uint64_t v) { EXPECT_EQ(::write(fds_[1], &v, sizeof v), ssize_t(sizeof v)); }
  // 0 if the writer went away.
  uint64_t receive() {
    uint64_t v = 0;
    return ::read(fds_[0], &v, sizeof v) == ssize_t(sizeof v) ? v : 0;
  }

 private:
  int fds_[2] = {-1, -1};
};

// Forks; the child runs fn and exits with its return value (never returning into gtest).
template <typename Fn>
pid_t fork_peer(Fn fn) {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(fn());
  return pid;
}
inline int wait_exit_code(pid_t pid) {
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// Submits requests as one batch, waits, and returns the batch (the caller frees it).
inline BatchId run_batch(TransferEngine& e, const std::vector<TransferRequest>& requests,
                         std::chrono::milliseconds timeout = std::chrono::seconds(20)) {
  BatchId b = *e.allocate_batch(requests.size());
  auto s = e.submit(b, requests);
  EXPECT_TRUE(s) << s.error().message();
  (void)e.wait_batch(b, timeout);
  return b;
}

}  // namespace recur::transfer::testing
