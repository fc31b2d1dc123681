// Image decoding (src/stack/serve/image_decode.h) fed arbitrary bytes: as a PNG file, as a PPM file and
// as a data: URI. Each must give pixels of the size it states, or an error; never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string_view>

#include "serve/image_decode.h"

namespace {

void check_image(const recur::Result<recur::RgbImage>& r) {
  if (r && r->pixels.size() != size_t(r->width) * size_t(r->height) * 3) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  check_image(recur::serve::decode_png(bytes, "fuzz"));
  check_image(recur::serve::decode_ppm(bytes, "fuzz"));
  check_image(recur::serve::decode_image_data_uri(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz"));
  return 0;
}
