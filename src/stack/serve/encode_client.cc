// The front end's side of the encode worker: remote_image_encoder (image_encoder.h).
#include <httplib.h>

#include "serve/encode_wire.h"
#include "serve/image_encoder.h"

namespace recur::serve {
namespace {

class RemoteImageEncoder final : public ImageEncoder {
 public:
  RemoteImageEncoder(std::string url, std::string api_key) : url_(std::move(url)), api_key_(std::move(api_key)) {}
  Result<ImageEmbedding> encode(const RgbImage& image) const override {
    httplib::Client cli(url_);  // one per call: HTTP threads encode concurrently
    cli.set_connection_timeout(2);
    cli.set_read_timeout(60);
    httplib::Headers headers;
    if (!api_key_.empty()) headers.emplace("Authorization", "Bearer " + api_key_);
    auto r = cli.Post("/v1/encode", headers, encode_request_json(ppm_data_uri(image)), "application/json");
    if (!r) return io_error("encode worker {}: POST /v1/encode: {}", url_, httplib::to_string(r.error()));
    if (r->status != 200)
      return io_error("encode worker {}: POST /v1/encode answered HTTP {}: {}", url_, r->status, r->body.substr(0, 300));
    auto e = parse_encode_response(r->body);
    if (!e) return unexpected(e.error().with_context(fmt::format("encode worker {}", url_)));
    return e;
  }
  std::string describe() const override { return "encode worker " + url_; }

 private:
  std::string url_, api_key_;
};

}  // namespace

Result<std::unique_ptr<ImageEncoder>> remote_image_encoder(const std::string& url, const std::string& api_key) {
  if (!url.starts_with("http://"))
    return invalid_argument("--encode '{}': expected http://host:port of a `recur serve --role encode` worker", url);
  return std::unique_ptr<ImageEncoder>(new RemoteImageEncoder(url, api_key));
}

}  // namespace recur::serve
