#include "serve/image_decode.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace recur::serve {
namespace {

std::string lower_ascii(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

}  // namespace

Result<RgbImage> decode_image_data_uri(std::string_view uri, std::string_view what) {
  constexpr std::string_view kScheme = "data:";
  if (uri.size() < kScheme.size() || lower_ascii(uri.substr(0, kScheme.size())) != kScheme)
    return invalid_argument("{}: the image URL must be a data: URI (data:image/png;base64,...); remote URLs are not "
                            "fetched",
                            what);
  const size_t comma = uri.find(',');
  if (comma == std::string_view::npos)
    return invalid_argument("{}: data: URI byte {}: expected ',' before the data", what, uri.size());
  const std::string header = lower_ascii(uri.substr(kScheme.size(), comma - kScheme.size()));
  constexpr std::string_view kBase64 = ";base64";
  if (header.size() < kBase64.size() || !header.ends_with(kBase64))
    return invalid_argument("{}: data: URI byte {}: expected ';base64' before ','; only base64 data is accepted", what,
                            comma);
  const std::string media = header.substr(0, header.size() - kBase64.size());
  const bool png = media == "image/png";
  const bool ppm = media == "image/x-portable-pixmap" || media == "image/ppm";
  if (!png && !ppm)
    return invalid_argument("{}: data: URI byte {}: media type '{}' is not supported; expected image/png or "
                            "image/x-portable-pixmap",
                            what, kScheme.size(), media);
  auto bytes = decode_base64(uri.substr(comma + 1), fmt::format("{} (data from URI byte {})", what, comma + 1));
  if (!bytes) return unexpected(bytes.error());
  return png ? decode_png(*bytes, what) : decode_ppm(*bytes, what);
}

}  // namespace recur::serve
