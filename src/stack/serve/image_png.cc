#include <png.h>

#include <memory>

#include "serve/image_decode.h"

namespace recur::serve {

Result<RgbImage> decode_png(std::span<const uint8_t> bytes, std::string_view what) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  // The simplified API reports errors in image.message and never longjmps into our frames.
  if (!png_image_begin_read_from_memory(&image, bytes.data(), bytes.size()))
    return invalid_argument("{}: PNG of {} bytes: header: {}", what, bytes.size(), image.message);
  // png_image_free is idempotent (finish_read frees too), so the guard may run after it.
  std::unique_ptr<png_image, void (*)(png_image*)> guard(&image, png_image_free);
  if (image.width == 0 || image.height == 0 || image.width > uint32_t(kMaxImageSide) ||
      image.height > uint32_t(kMaxImageSide) || int64_t(image.width) * image.height > kMaxImagePixels)
    return invalid_argument("{}: PNG is {}x{}; expected 1 to {} pixels a side", what, image.width, image.height,
                            kMaxImageSide);
  image.format = PNG_FORMAT_RGB;  // libpng converts gray, palette, 16-bit and drops alpha (on black)
  RgbImage out;
  out.width = int(image.width);
  out.height = int(image.height);
  out.pixels.resize(PNG_IMAGE_SIZE(image));
  if (!png_image_finish_read(&image, nullptr, out.pixels.data(), 0, nullptr))
    return invalid_argument("{}: PNG {}x{} of {} bytes: pixel data: {}", what, out.width, out.height, bytes.size(),
                            image.message);
  return out;
}

}  // namespace recur::serve
