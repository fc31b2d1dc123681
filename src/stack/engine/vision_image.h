// An RGB image as the vision encoder takes it: 8-bit channels, rows top to bottom, pixels left
// to right, R G B per pixel. Decoders (serve/image_decode.h) produce it.
#pragma once

#include <cstdint>
#include <vector>

namespace recur {

struct RgbImage {
  int width = 0;
  int height = 0;
  std::vector<uint8_t> pixels;  // width * height * 3
};

}  // namespace recur
