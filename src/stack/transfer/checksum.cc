#include "transfer/checksum.h"

#include <xxhash.h>

namespace recur::transfer {

uint64_t checksum64(std::span<const std::byte> data, uint64_t seed) {
  return XXH3_64bits_withSeed(data.data(), data.size(), seed);
}


Checksum64Stream::Checksum64Stream(uint64_t seed) : state_(XXH3_createState()) {
  XXH3_64bits_reset_withSeed(static_cast<XXH3_state_t*>(state_), seed);
}
Checksum64Stream::~Checksum64Stream() { XXH3_freeState(static_cast<XXH3_state_t*>(state_)); }
void Checksum64Stream::update(std::span<const std::byte> data) {
  XXH3_64bits_update(static_cast<XXH3_state_t*>(state_), data.data(), data.size());
}
uint64_t Checksum64Stream::digest() const { return XXH3_64bits_digest(static_cast<XXH3_state_t*>(state_)); }

}  // namespace recur::transfer
