#include "serve/encode_wire.h"

#include <cstring>

#include <nlohmann/json.hpp>

#include "serve/image_decode.h"

namespace recur::serve {

using nlohmann::json;

std::string ppm_data_uri(const RgbImage& image) {
  std::string ppm = fmt::format("P6\n{} {}\n255\n", image.width, image.height);
  ppm.append(reinterpret_cast<const char*>(image.pixels.data()), image.pixels.size());
  return "data:image/x-portable-pixmap;base64," +
         encode_base64(std::span(reinterpret_cast<const uint8_t*>(ppm.data()), ppm.size()));
}

std::string encode_request_json(std::string_view data_uri) { return json{{"image", data_uri}}.dump(); }

expected<std::string, ApiError> parse_encode_request(std::string_view body) {
  try {
    const json doc = json::parse(body);
    if (!doc.is_object() || !doc.contains("image") || !doc["image"].is_string())
      return unexpected(schema_error("image", "'image' is required: a data: URI string (PNG or PPM)"));
    return doc["image"].get<std::string>();
  } catch (const json::exception& e) {
    return unexpected(ApiError{400, fmt::format("the body is not valid JSON: {}", e.what()), "invalid_request_error",
                               "", "invalid_json"});
  }
}

std::string encode_response_json(const ImageEmbedding& e) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(e.data.data());
  return json{{"object", "image.embedding"}, {"rows", e.rows}, {"dim", e.dim}, {"dtype", "float32"},
              {"data", encode_base64(std::span(bytes, e.data.size() * sizeof(float)))}}
      .dump();
}

Result<ImageEmbedding> parse_encode_response(std::string_view body) {
  static_assert(std::endian::native == std::endian::little, "the wire format is little-endian float32");
  ImageEmbedding e;
  std::string data;
  try {
    const json doc = json::parse(body);
    if (!doc.is_object() || doc.value("dtype", "") != "float32" || !doc.contains("rows") ||
        !doc["rows"].is_number_integer() || !doc.contains("dim") || !doc["dim"].is_number_integer() ||
        !doc.contains("data") || !doc["data"].is_string())
      return parse_error("encode response: expected an object with integer rows and dim, dtype float32 and string data");
    e.rows = doc["rows"].get<int>();
    e.dim = doc["dim"].get<int>();
    data = doc["data"].get<std::string>();
  } catch (const json::exception& ex) {
    return parse_error("encode response: {}", ex.what());
  }
  if (e.rows < 1 || e.dim < 1 || e.rows > 65536 || e.dim > 65536)
    return parse_error("encode response: rows {} and dim {}; expected 1 to 65536 each", e.rows, e.dim);
  RECUR_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, decode_base64(data, "encode response data"));
  if (bytes.size() != size_t(e.rows) * size_t(e.dim) * sizeof(float))
    return parse_error("encode response: data holds {} bytes; rows {} x dim {} float32 are {}", bytes.size(), e.rows,
                       e.dim, size_t(e.rows) * size_t(e.dim) * sizeof(float));
  e.data.resize(size_t(e.rows) * size_t(e.dim));
  std::memcpy(e.data.data(), bytes.data(), bytes.size());
  return e;
}

}  // namespace recur::serve
