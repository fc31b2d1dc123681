// `recur serve --role encode`: the encode worker (docs/serve.md, "Images and the encode worker").
// POST /v1/encode takes {"image": data: URI} and answers the image's embedding rows
// (encode_wire.h); GET /health, GET /metrics. Each HTTP thread encodes on its own thread; with
// --api-key every route but /health needs the bearer key. Bodies may be as large as --max-body or
// the PPM data: URI of the largest image (4096x4096, about 67 MB), whichever is larger, since
// front ends send the pixels they decoded. Serves until SIGTERM/SIGINT.
#pragma once

#include <string>

#include "core/status.h"
#include "serve/serve.h"

namespace recur::serve {

// vision_model: the encoder GGUF (empty: the embedded default projecting to out_dim); options:
// host, port, api_key, http_threads, max_body_bytes.
Status run_encode_worker(const ServeOptions& options, const std::string& vision_model, int out_dim);

}  // namespace recur::serve
