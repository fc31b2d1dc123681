// Images in chat messages: data: URIs (`data:image/png;base64,...`,
// `data:image/x-portable-pixmap;base64,...`) decoded to RGB8 pixels for the vision encoder.
//
// PNG goes through libpng's simplified API (png_image_*: no setjmp, errors come back as a
// message); PPM (P6 binary and P3 text, maxval up to 65535) is parsed here. Every error names
// the input (`what`, e.g. "messages[0].content[1]") and the position (byte offset in the URI or
// in the decoded file) and says what was expected; no input crashes (fuzz/image.cmake).
// Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "engine/vision_image.h"

namespace recur::serve {

// Larger images are refused before their pixels are allocated.
inline constexpr int kMaxImageSide = 4096;
inline constexpr int64_t kMaxImagePixels = int64_t(4096) * 4096;

// Standard base64 (RFC 4648, '=' padding optional, no whitespace); errors give the byte offset.
Result<std::vector<uint8_t>> decode_base64(std::string_view text, std::string_view what);
std::string encode_base64(std::span<const uint8_t> bytes);

Result<RgbImage> decode_png(std::span<const uint8_t> bytes, std::string_view what);
Result<RgbImage> decode_ppm(std::span<const uint8_t> bytes, std::string_view what);

// A data: URI with media type image/png or image/x-portable-pixmap (also image/ppm) and
// base64 data; the file's magic must match the media type.
Result<RgbImage> decode_image_data_uri(std::string_view uri, std::string_view what);

}  // namespace recur::serve
