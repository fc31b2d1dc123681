#include <cctype>

#include "serve/image_decode.h"

namespace recur::serve {
namespace {

// A cursor over a PPM header: whitespace and '#' comments between decimal fields.
struct PpmReader {
  std::span<const uint8_t> bytes;
  size_t at = 0;
  std::string_view what;

  void skip_space_and_comments() {
    while (at < bytes.size()) {
      if (bytes[at] == '#') {
        while (at < bytes.size() && bytes[at] != '\n') ++at;
      } else if (std::isspace(bytes[at])) {
        ++at;
      } else {
        return;
      }
    }
  }

  Result<int64_t> number(std::string_view field, int64_t lo, int64_t hi) {
    skip_space_and_comments();
    const size_t start = at;
    int64_t v = 0;
    bool over = false;  // saturate: more digits than any limit allows
    while (at < bytes.size() && std::isdigit(bytes[at])) {
      v = v * 10 + (bytes[at++] - '0');
      if (v > hi) over = true, v = hi + 1;
    }
    if (at == start) {
      if (start >= bytes.size()) return invalid_argument("{}: PPM byte {}: the file ends; expected the {}", what, start, field);
      return invalid_argument("{}: PPM byte {}: expected the {} (a decimal number), got 0x{:02x}", what, start, field,
                              bytes[start]);
    }
    if (v < lo || v > hi)
      return over ? invalid_argument("{}: PPM byte {}: the {} is over {}; expected {} to {}", what, start, field, hi, lo, hi)
                  : invalid_argument("{}: PPM byte {}: the {} is {}; expected {} to {}", what, start, field, v, lo, hi);
    return v;
  }
};

uint8_t ppm_scale_sample(int64_t v, int64_t maxval) { return uint8_t((v * 255 + maxval / 2) / maxval); }

}  // namespace

Result<RgbImage> decode_ppm(std::span<const uint8_t> bytes, std::string_view what) {
  if (bytes.size() < 2 || bytes[0] != 'P' || (bytes[1] != '6' && bytes[1] != '3'))
    return invalid_argument("{}: PPM byte 0: expected the magic 'P6' (binary) or 'P3' (text)", what);
  const bool binary = bytes[1] == '6';
  PpmReader r{bytes, 2, what};
  auto width = r.number("width", 1, kMaxImageSide);
  if (!width) return unexpected(width.error());
  auto height = r.number("height", 1, kMaxImageSide);
  if (!height) return unexpected(height.error());
  auto maxval = r.number("maxval", 1, 65535);
  if (!maxval) return unexpected(maxval.error());
  if (*width * *height > kMaxImagePixels)
    return invalid_argument("{}: PPM is {}x{}; expected at most {} pixels", what, *width, *height, kMaxImagePixels);
  RgbImage out;
  out.width = int(*width);
  out.height = int(*height);
  const size_t samples = size_t(*width * *height * 3);
  out.pixels.resize(samples);
  if (binary) {
    // Exactly one whitespace byte separates maxval from the raster.
    if (r.at >= bytes.size() || !std::isspace(bytes[r.at]))
      return invalid_argument("{}: PPM byte {}: expected one whitespace byte after maxval", what, r.at);
    ++r.at;
    const size_t sample_bytes = *maxval > 255 ? 2 : 1;
    if (bytes.size() - r.at < samples * sample_bytes)
      return invalid_argument("{}: PPM {}x{} is truncated: byte {}: {} raster bytes left; expected {}", what, *width,
                              *height, bytes.size(), bytes.size() - r.at, samples * sample_bytes);
    for (size_t i = 0; i < samples; ++i) {
      const uint8_t* s = bytes.data() + r.at + i * sample_bytes;
      const int64_t v = sample_bytes == 2 ? (int64_t(s[0]) << 8 | s[1]) : s[0];
      if (v > *maxval)
        return invalid_argument("{}: PPM byte {}: sample {} is over maxval {}", what, r.at + i * sample_bytes, v,
                                *maxval);
      out.pixels[i] = ppm_scale_sample(v, *maxval);
    }
  } else {
    for (size_t i = 0; i < samples; ++i) {
      auto v = r.number("sample", 0, *maxval);
      if (!v) return unexpected(v.error());
      out.pixels[i] = ppm_scale_sample(*v, *maxval);
    }
  }
  return out;
}

}  // namespace recur::serve
