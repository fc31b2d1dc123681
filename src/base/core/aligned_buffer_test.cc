#include "core/aligned_buffer.h"

#include <gtest/gtest.h>

#include <cstdint>

#include "core/log.h"

namespace recur {
namespace {

TEST(AlignedBuffer, AlignsZeroesAndMoves) {
  for (size_t bytes : {1u, 63u, 64u, 1000u, 1u << 20}) {
    AlignedBuffer b(bytes, /*zeroed=*/true);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % kCacheLine, 0u) << bytes;
    EXPECT_EQ(b.size(), bytes);
    for (size_t i = 0; i < bytes; ++i) ASSERT_EQ(b.data()[i], std::byte{0});
  }
  AlignedBuffer page(100, false, 4096);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(page.data()) % 4096, 0u);

  AlignedBuffer a = make_aligned<float>(16, true);
  a.as<float>()[3] = 2.5f;
  std::byte* p = a.data();
  AlignedBuffer moved = std::move(a);
  EXPECT_EQ(moved.data(), p);
  EXPECT_EQ(a.data(), nullptr);
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(moved.as<float>().size(), 16u);
  EXPECT_EQ(moved.as<float>()[3], 2.5f);
  AlignedBuffer empty;
  EXPECT_EQ(empty.data(), nullptr);
  moved = std::move(empty);
  EXPECT_EQ(moved.size(), 0u);
}

TEST(Log, LevelsParseAndFilter) {
  EXPECT_EQ(parse_log_level("debug"), LogLevel::kDebug);
  EXPECT_EQ(parse_log_level("error"), LogLevel::kError);
  EXPECT_FALSE(parse_log_level("loud").has_value());
  LogLevel before = log_level();
  set_log_level(LogLevel::kWarn);
  EXPECT_EQ(log_level(), LogLevel::kWarn);
  testing::internal::CaptureStderr();
  LOG_INFO("hidden {}", 1);
  LOG_WARN("shown {}", 2);
  std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err, "[recur warn] shown 2\n");
  set_log_level(before);
}

}  // namespace
}  // namespace recur
