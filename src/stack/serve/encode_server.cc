#include "serve/encode_server.h"

#include <algorithm>
#include <atomic>

#include <httplib.h>

#include "core/clock.h"
#include "serve/bearer_auth.h"
#include "serve/encode_wire.h"
#include "serve/image_decode.h"
#include "serve/role_protocol.h"

namespace recur::serve {

Status run_encode_worker(const ServeOptions& options, const std::string& vision_model, int out_dim) {
  block_stop_signals();
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<ImageEncoder> encoder, local_image_encoder(vision_model, out_dim));
  RECUR_RETURN_IF_ERROR(encoder->encode(RgbImage{1, 1, {0, 0, 0}}));  // load now: errors at startup
  std::atomic<int64_t> images{0}, failed{0}, encode_ns{0};
  HttpFront svr;
  FrontOptions front = front_options(options);
  // A front end sends the pixels it decoded as a PPM data: URI: room for the largest image it accepts.
  const size_t largest_ppm_uri = (size_t(kMaxImagePixels) * 3 + 64) / 3 * 4 + 128;
  front.max_body_bytes = std::max(options.max_body_bytes, largest_ppm_uri);
  svr.set_payload_max_length(front.max_body_bytes);
  require_bearer_key(svr, options.api_key);
  svr.Post("/v1/encode", [&](const httplib::Request& req, httplib::Response& res) {
    auto uri = parse_encode_request(req.body);
    if (!uri) return role_send_error(res, uri.error());
    auto image = decode_image_data_uri(*uri, "image");
    if (!image) {
      failed.fetch_add(1);
      return role_send_error(res, bad_request("image", "invalid_image", "{}", image.error().message()));
    }
    const int64_t t0 = now_ns();
    auto e = encoder->encode(*image);
    encode_ns.fetch_add(now_ns() - t0);
    if (!e) {
      failed.fetch_add(1);
      return role_send_error(res, {500, e.error().to_string(), "server_error", "", "encode_failed"});
    }
    images.fetch_add(1);
    res.set_content(encode_response_json(*e), "application/json");
  });
  role_add_worker_routes(svr, "encode", [&] {
    return fmt::format(
        "# HELP recur_encode_images_total images encoded\n# TYPE recur_encode_images_total counter\n"
        "recur_encode_images_total {}\n"
        "# HELP recur_encode_failures_total requests refused or failed\n# TYPE recur_encode_failures_total counter\n"
        "recur_encode_failures_total {}\n"
        "# HELP recur_encode_seconds_total time spent in the vision encoder\n"
        "# TYPE recur_encode_seconds_total counter\nrecur_encode_seconds_total {}\n",
        images.load(), failed.load(), double(encode_ns.load()) * 1e-9);
  });
  return serve_until_signal(svr, options, front, "encode worker, " + encoder->describe());
}

}  // namespace recur::serve
