#include "serve/image_encoder.h"

#include <mutex>
#include <optional>

#include "engine/vision_encoder.h"

namespace recur::serve {
namespace {

// Loads the encoder on the first image, so servers that never see one never write or map it.
class LocalImageEncoder final : public ImageEncoder {
 public:
  LocalImageEncoder(std::string path, int out_dim) : path_(std::move(path)), out_dim_(out_dim) {}
  Result<ImageEmbedding> encode(const RgbImage& image) const override {
    std::call_once(loaded_, [this] { encoder_ = load(); });
    if (!*encoder_) return unexpected(encoder_->error());
    const VisionEncoder& e = ***encoder_;
    ImageEmbedding out{e.config().num_patches(), e.config().out_dim, {}};
    RECUR_ASSIGN_OR_RETURN(out.data, e.encode(image, nullptr));
    return out;
  }
  std::string describe() const override {
    return path_.empty() ? fmt::format("in process (the embedded default vision encoder to {} floats, loaded on the "
                                       "first image)",
                                       out_dim_)
                         : fmt::format("in process ({}, loaded on the first image)", path_);
  }

 private:
  Result<std::unique_ptr<VisionEncoder>> load() const {
    std::string p = path_;
    if (p.empty()) {
      RECUR_ASSIGN_OR_RETURN(p, default_vision_encoder_path(out_dim_));
    }
    return VisionEncoder::load(p);
  }
  std::string path_;
  int out_dim_;
  mutable std::once_flag loaded_;
  mutable std::optional<Result<std::unique_ptr<VisionEncoder>>> encoder_;
};

std::mutex installed_encoder_mu;
std::shared_ptr<const ImageEncoder> installed_encoder;

}  // namespace

Result<std::unique_ptr<ImageEncoder>> local_image_encoder(const std::string& path, int out_dim) {
  if (out_dim < 1) return invalid_argument("vision encoder: out_dim {} must be positive", out_dim);
  return std::unique_ptr<ImageEncoder>(new LocalImageEncoder(path, out_dim));
}

void install_image_encoder(std::shared_ptr<const ImageEncoder> encoder) {
  std::lock_guard lock(installed_encoder_mu);
  installed_encoder = std::move(encoder);
}

std::shared_ptr<const ImageEncoder> installed_image_encoder() {
  std::lock_guard lock(installed_encoder_mu);
  return installed_encoder;
}

}  // namespace recur::serve
