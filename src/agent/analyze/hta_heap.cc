#include "analyze/hta_heap.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace recur::analyze {

void reserve_heap(size_t bytes) {
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
  constexpr size_t kHuge = size_t(2) << 20;
  constexpr int kNever = 1 << 30;  // bytes: above any block we allocate
  mallopt(M_MMAP_THRESHOLD, kNever);
  mallopt(M_TRIM_THRESHOLD, kNever);
  mallopt(M_ARENA_MAX, 1);
  bytes = (bytes + kHuge - 1) / kHuge * kHuge + 2 * kHuge;
  void* block = std::malloc(bytes);
  if (block == nullptr) return;
  // The 2 MiB-aligned part of the block becomes huge-page backed; freeing the block leaves it
  // at the top of the heap for the allocations that follow.
  uintptr_t begin = (reinterpret_cast<uintptr_t>(block) + kHuge - 1) & ~(kHuge - 1);
  uintptr_t end = (reinterpret_cast<uintptr_t>(block) + bytes) & ~(kHuge - 1);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  std::free(block);
#else
  (void)bytes;
#endif
}

size_t trace_json_bytes(const std::string& path) {
  std::error_code ec;
  uintmax_t size = std::filesystem::file_size(path, ec);
  if (ec) return 0;
  std::ifstream f(path, std::ios::binary);
  unsigned char head[2] = {0, 0}, tail[4] = {0, 0, 0, 0};
  if (!f.read(reinterpret_cast<char*>(head), 2) || head[0] != 0x1f || head[1] != 0x8b || size < 18) return size_t(size);
  f.seekg(-4, std::ios::end);
  if (!f.read(reinterpret_cast<char*>(tail), 4)) return size_t(size);
  // ISIZE: the uncompressed size mod 2^32 (of the last member); never below the gzip size.
  uint32_t isize = uint32_t(tail[0]) | uint32_t(tail[1]) << 8 | uint32_t(tail[2]) << 16 | uint32_t(tail[3]) << 24;
  return std::max<size_t>(isize, size_t(size));
}

}  // namespace recur::analyze
