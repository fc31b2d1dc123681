// Where a server's images are encoded (docs/serve.md, "Images and the encode worker"): in this
// process (the vision encoder, engine/vision_encoder.h) or by an encode worker over HTTP
// (`recur serve --role encode`, POST /v1/encode; encode_wire.h). The process installs at most
// one encoder at startup; chat requests with images are refused where none is installed (the
// disaggregated roles).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/vision_image.h"

namespace recur::serve {

struct ImageEmbedding {
  int rows = 0;  // prompt positions the image takes
  int dim = 0;   // floats per row (the language model's hidden size)
  std::vector<float> data;
};

class ImageEncoder {
 public:
  virtual ~ImageEncoder() = default;
  // Thread-safe: HTTP threads call it concurrently.
  virtual Result<ImageEmbedding> encode(const RgbImage& image) const = 0;
  // "in process (vision encoder ...)" or "http://host:port", for the startup line.
  virtual std::string describe() const = 0;
};

// The vision encoder GGUF at `path` (empty: the embedded default projecting to `out_dim`, the
// language model's hidden size, written once into the model cache), run on the calling thread.
// It is loaded by the first encode() (a server that never sees an image never maps it); a load
// error is returned by that and every later call.
Result<std::unique_ptr<ImageEncoder>> local_image_encoder(const std::string& path, int out_dim);
// An encode worker at `url` (http://host:port); api_key as the worker's --api-key (may be empty).
Result<std::unique_ptr<ImageEncoder>> remote_image_encoder(const std::string& url, const std::string& api_key);

// The process's encoder: set once at startup, read by request preparation (prompt.h).
void install_image_encoder(std::shared_ptr<const ImageEncoder> encoder);
std::shared_ptr<const ImageEncoder> installed_image_encoder();

}  // namespace recur::serve
