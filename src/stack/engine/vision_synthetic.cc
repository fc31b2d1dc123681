// Synthetic weights for the vision encoder (vision_encoder.h) and its cached embedded default.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

#include "core/log.h"
#include "engine/model_cache.h"
#include "engine/vision_encoder.h"

namespace recur {
namespace {

class VisionTensorWriter {
 public:
  VisionTensorWriter(gguf::Writer& w, uint64_t seed) : w_(w), rng_(seed) {}
  Status normal(const std::string& name, int64_t rows, int64_t cols, double stddev) {
    std::normal_distribution<float> dist(0.0f, float(stddev));
    std::vector<float> x(size_t(rows * cols));
    for (float& v : x) v = dist(rng_);
    return put(name, rows == 1 ? std::vector<uint64_t>{uint64_t(cols)} : std::vector<uint64_t>{uint64_t(cols), uint64_t(rows)}, x);
  }
  Status ones(const std::string& name, int64_t n) { return put(name, {uint64_t(n)}, std::vector<float>(size_t(n), 1.0f)); }

 private:
  Status put(const std::string& name, std::vector<uint64_t> dims, const std::vector<float>& x) {
    std::vector<std::byte> bytes(x.size() * sizeof(float));
    std::memcpy(bytes.data(), x.data(), bytes.size());
    return w_.add_tensor(name, gguf::TensorType::kF32, std::move(dims), bytes);
  }
  gguf::Writer& w_;
  std::mt19937_64 rng_;
};

}  // namespace

Status validate_vision_config(const VisionConfig& c) {
  if (c.patch < 1 || c.image_size < c.patch || c.image_size % c.patch != 0)
    return invalid_argument("vision config: image_size {} must be a positive multiple of patch {}", c.image_size, c.patch);
  if (c.image_size > 1024) return invalid_argument("vision config: image_size {} is over 1024", c.image_size);
  if (c.dim < 1 || c.n_heads < 1 || c.dim % c.n_heads != 0)
    return invalid_argument("vision config: dim {} must be a positive multiple of n_heads {}", c.dim, c.n_heads);
  if (c.n_layers < 0 || c.n_layers > 256 || c.ffn_dim < 1 || c.out_dim < 1 || c.dim > 65536 || c.ffn_dim > 262144 ||
      c.out_dim > 65536)
    return invalid_argument("vision config: n_layers {}, ffn_dim {}, out_dim {} out of range", c.n_layers, c.ffn_dim,
                            c.out_dim);
  if (!(c.rms_eps > 0.0f)) return invalid_argument("vision config: rms_eps {} must be positive", c.rms_eps);
  return ok_status();
}

Result<gguf::Writer> synthetic_vision_encoder(const VisionConfig& c, uint64_t seed) {
  RECUR_RETURN_IF_ERROR(validate_vision_config(c));
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::of_string("recur-vision"));
  w.set("general.name", gguf::Value::of_string(fmt::format("synthetic vision encoder seed {}", seed)));
  w.set("vision.image_size", gguf::Value::of_u32(uint32_t(c.image_size)));
  w.set("vision.patch_size", gguf::Value::of_u32(uint32_t(c.patch)));
  w.set("vision.embedding_length", gguf::Value::of_u32(uint32_t(c.dim)));
  w.set("vision.block_count", gguf::Value::of_u32(uint32_t(c.n_layers)));
  w.set("vision.attention.head_count", gguf::Value::of_u32(uint32_t(c.n_heads)));
  w.set("vision.feed_forward_length", gguf::Value::of_u32(uint32_t(c.ffn_dim)));
  w.set("vision.projection_dim", gguf::Value::of_u32(uint32_t(c.out_dim)));
  w.set("vision.attention.layer_norm_rms_epsilon", gguf::Value::of_f32(c.rms_eps));
  VisionTensorWriter t(w, seed);
  const int64_t pixels_per_patch = 3 * int64_t(c.patch) * c.patch;
  const double residual_scale = 1.0 / std::sqrt(2.0 * std::max(1, c.n_layers));
  RECUR_RETURN_IF_ERROR(t.normal("v.patch_embd.weight", c.dim, pixels_per_patch, 1.0 / std::sqrt(double(pixels_per_patch))));
  RECUR_RETURN_IF_ERROR(t.normal("v.pos_embd.weight", c.num_patches(), c.dim, 0.5));
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("v.blk.{}.", l);
    const double in_std = 1.0 / std::sqrt(double(c.dim));
    RECUR_RETURN_IF_ERROR(t.ones(p + "attn_norm.weight", c.dim));
    RECUR_RETURN_IF_ERROR(t.normal(p + "attn_q.weight", c.dim, c.dim, in_std));
    RECUR_RETURN_IF_ERROR(t.normal(p + "attn_k.weight", c.dim, c.dim, in_std));
    RECUR_RETURN_IF_ERROR(t.normal(p + "attn_v.weight", c.dim, c.dim, in_std));
    RECUR_RETURN_IF_ERROR(t.normal(p + "attn_out.weight", c.dim, c.dim, in_std * residual_scale));
    RECUR_RETURN_IF_ERROR(t.ones(p + "ffn_norm.weight", c.dim));
    RECUR_RETURN_IF_ERROR(t.normal(p + "ffn_gate.weight", c.ffn_dim, c.dim, in_std));
    RECUR_RETURN_IF_ERROR(t.normal(p + "ffn_up.weight", c.ffn_dim, c.dim, in_std));
    RECUR_RETURN_IF_ERROR(
        t.normal(p + "ffn_down.weight", c.dim, c.ffn_dim, residual_scale / std::sqrt(double(c.ffn_dim))));
  }
  RECUR_RETURN_IF_ERROR(t.ones("v.post_norm.weight", c.dim));
  RECUR_RETURN_IF_ERROR(t.normal("v.proj.weight", c.out_dim, c.dim, 1.0 / std::sqrt(double(c.dim))));
  return w;
}

Result<std::string> default_vision_encoder_path(int out_dim) {
  namespace fs = std::filesystem;
  VisionConfig c;
  c.out_dim = out_dim;
  RECUR_RETURN_IF_ERROR(validate_vision_config(c));
  const fs::path dir = model_cache_dir();
  const fs::path path = dir / fmt::format("default-vision-i{}-p{}-d{}-l{}-o{}-f32-seed1.gguf", c.image_size, c.patch,
                                          c.dim, c.n_layers, c.out_dim);
  if (fs::exists(path)) return path.string();
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return io_error("{}: cannot create: {}", dir.string(), ec.message());
  LOG_INFO("writing the vision encoder {} (once)", path.string());
  RECUR_ASSIGN_OR_RETURN(gguf::Writer w, synthetic_vision_encoder(c, 1));
  RECUR_RETURN_IF_ERROR(w.write(path.string()));
  return path.string();
}

}  // namespace recur
