// The encode worker's HTTP message (`recur serve --role encode`, POST /v1/encode):
//
//   request   {"image": "data:image/png;base64,..."}   (PNG or PPM data: URI, image_decode.h)
//   response  {"object": "image.embedding", "rows": 16, "dim": 768, "dtype": "float32",
//              "data": "<base64 of rows * dim little-endian float32>"}
//
// A front end that has already decoded an image sends its pixels as a binary PPM data: URI
// (ppm_data_uri), so the worker never sees a format the front end did not accept. Pure
// functions; parse errors name the field and what was expected.
#pragma once

#include <string>
#include <string_view>

#include "core/status.h"
#include "engine/vision_image.h"
#include "serve/api_error.h"
#include "serve/image_encoder.h"

namespace recur::serve {

std::string ppm_data_uri(const RgbImage& image);

std::string encode_request_json(std::string_view data_uri);
// The data: URI of a request body; 400/422 errors in OpenAI's shape.
expected<std::string, ApiError> parse_encode_request(std::string_view body);

std::string encode_response_json(const ImageEmbedding& e);
Result<ImageEmbedding> parse_encode_response(std::string_view body);

}  // namespace recur::serve
