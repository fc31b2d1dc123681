#include "transfer/checksum.h"

#include <xxhash.h>

namespace recur::transfer {

uint64_t checksum64(std::span<const std::byte> data, uint64_t seed) {
  return XXH3_64bits_withSeed(data.data(), data.size(), seed);
}

}  // namespace recur::transfer
