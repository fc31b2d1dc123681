// KV blocks: the header and checksum reject corrupt, truncated and stale blocks, and under
// concurrency (this test runs in the TSan build) a reader never sees a block before it is
// complete, across many generations of reuse.
#include "transfer/kv_block.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

#include "core/aligned_buffer.h"

namespace recur::transfer {
namespace {

std::vector<std::byte> block_pattern(size_t bytes, uint64_t seed) {
  std::vector<std::byte> v(bytes);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (size_t i = 0; i < bytes; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    v[i] = std::byte(x);
  }
  return v;
}

TEST(KvBlock, WriteThenReadVerifies) {
  AlignedBuffer slot(kv_block_slot_bytes(1000), true);
  std::vector<std::byte> out(1000);
  KvBlockId id{5, 2, 3};
  auto r = try_read_kv_block(slot.data(), slot.size(), id, 1, out);
  ASSERT_TRUE(r);
  EXPECT_FALSE(*r) << "an unwritten slot is not ready";
  auto data = block_pattern(1000, 1);
  write_kv_block(slot.data(), id, 1, data);
  EXPECT_EQ(kv_block_ready(slot.data()), 1u);
  r = try_read_kv_block(slot.data(), slot.size(), id, 1, out);
  ASSERT_TRUE(r) << r.error().message();
  EXPECT_TRUE(*r);
  EXPECT_EQ(out, data);
  // Waiting for the next generation: not ready, nothing read.
  r = try_read_kv_block(slot.data(), slot.size(), id, 2, out);
  ASSERT_TRUE(r);
  EXPECT_FALSE(*r);
}

TEST(KvBlock, CorruptTruncatedAndForeignBlocksAreRejected) {
  AlignedBuffer slot(kv_block_slot_bytes(256), true);
  std::vector<std::byte> out(256);
  KvBlockId id{1, 0, 0};
  write_kv_block(slot.data(), id, 3, block_pattern(256, 3));
  // A flipped payload byte.
  slot.data()[kKvBlockHeaderBytes + 17] ^= std::byte{1};
  auto r = try_read_kv_block(slot.data(), slot.size(), id, 3, out);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code(), ErrorCode::kParse);
  EXPECT_NE(r.error().message().find("checksum"), std::string::npos) << r.error().message();
  // Truncated: fewer bytes than the reader expects, or a length past the slot.
  write_kv_block(slot.data(), id, 4, block_pattern(200, 4));
  r = try_read_kv_block(slot.data(), slot.size(), id, 4, out);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("length 200, expected 256"), std::string::npos) << r.error().message();
  KvBlockFields f;
  std::memcpy(&f, slot.data() + 8, sizeof f);
  f.length = 1 << 20;
  std::memcpy(slot.data() + 8, &f, sizeof f);
  r = try_read_kv_block(slot.data(), slot.size(), id, 4, out);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("does not fit its slot"), std::string::npos) << r.error().message();
  // Another sequence's block in this slot.
  write_kv_block(slot.data(), {2, 0, 0}, 5, block_pattern(256, 5));
  r = try_read_kv_block(slot.data(), slot.size(), id, 5, out);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("header says seq 2"), std::string::npos);
  // A payload published with a header from a different generation never verifies.
  write_kv_block(slot.data(), id, 6, block_pattern(256, 6));
  std::memcpy(&f, slot.data() + 8, sizeof f);
  write_kv_block(slot.data(), id, 7, block_pattern(256, 6));
  KvBlockFields g;
  std::memcpy(&g, slot.data() + 8, sizeof g);
  EXPECT_NE(f.checksum, g.checksum) << "the checksum is seeded with the generation";
}

// Writers publish every block generation after generation; readers poll and read. A block is
// reused only after every reader acknowledged the previous generation. Each reader checks that
// whatever it accepts is exactly what the writer wrote for that generation: a read of a block
// before it is complete would show up as a checksum error or wrong bytes (and, in the TSan
// build, as a data race report).
TEST(KvBlock, ReadersNeverSeeIncompleteBlocksUnderConcurrency) {
  constexpr int kWriters = 3;
  constexpr int kReaders = 3;
  constexpr int kBlocks = 12;
  constexpr uint64_t kGenerations = 150;
  constexpr size_t kPayload = 512;
  const size_t slot_bytes = kv_block_slot_bytes(kPayload);
  AlignedBuffer area(slot_bytes * kBlocks, true);
  std::vector<std::atomic<int>> acks(kBlocks);
  for (auto& a : acks) a.store(kReaders);
  std::atomic<int> bad{0};
  std::atomic<uint64_t> not_ready_polls{0};

  std::vector<std::thread> threads;
  for (int w = 0; w < kWriters; ++w) {
    threads.emplace_back([&, w] {
      for (uint64_t g = 1; g <= kGenerations; ++g) {
        for (int b = w; b < kBlocks; b += kWriters) {
          while (acks[b].load(std::memory_order_acquire) != kReaders) std::this_thread::yield();
          acks[b].store(0, std::memory_order_relaxed);
          std::byte* slot = area.data() + size_t(b) * slot_bytes;
          write_kv_block(slot, {7, 0, b}, g, block_pattern(kPayload, g * 100 + uint64_t(b)));
        }
      }
    });
  }
  for (int r = 0; r < kReaders; ++r) {
    threads.emplace_back([&] {
      std::vector<std::byte> out(kPayload);
      for (uint64_t g = 1; g <= kGenerations; ++g) {
        for (int b = 0; b < kBlocks; ++b) {
          const std::byte* slot = area.data() + size_t(b) * slot_bytes;
          for (;;) {
            auto got = try_read_kv_block(slot, slot_bytes, {7, 0, b}, g, out);
            if (!got) {
              bad.fetch_add(1);
              break;
            }
            if (*got) {
              if (out != block_pattern(kPayload, g * 100 + uint64_t(b))) bad.fetch_add(1);
              break;
            }
            not_ready_polls.fetch_add(1, std::memory_order_relaxed);
            std::this_thread::yield();
          }
          acks[b].fetch_add(1, std::memory_order_acq_rel);
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
  for (int b = 0; b < kBlocks; ++b) EXPECT_EQ(kv_block_ready(area.data() + size_t(b) * slot_bytes), kGenerations);
}

}  // namespace
}  // namespace recur::transfer
