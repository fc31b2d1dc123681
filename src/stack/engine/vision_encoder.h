// The vision encoder of the encode worker (docs/engine.md, "Vision encoder"): an image becomes
// `num_patches` embedding rows of the language model's hidden size, which the prefill consumes
// in place of token embeddings (model.h, BatchToken::embedding).
//
//   RGB8 image -> center crop to a square -> bilinear resize to image_size x image_size
//   -> scale to [-1, 1] -> patches of patch x patch pixels (channel, row, column order) times
//   v.patch_embd [dim, 3 patch^2] (convolution as one GEMM) + v.pos_embd [patches, dim]
//   -> layers of: x += Wo attn(rmsnorm(x)) (bidirectional multi-head attention over the
//      patches), x += Wdown (silu(Wgate h) * Wup h), h = rmsnorm(x)
//   -> rmsnorm (v.post_norm) -> v.proj [out_dim, dim] -> [patches, out_dim]
//
// Weights are GGUF tensors (general.architecture "recur-vision", keys vision.*); synthetic
// ones follow synthetic.h's statistics (N(0, 1/fan_in), residual writers scaled by
// 1/sqrt(2 layers), norms 1), so activations stay finite and the output rows have RMS near 1,
// like the language model's N(0, 1) token embeddings. Every layer is a trace zone.
// Immutable after load; encode() is thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/gguf.h"
#include "engine/vision_image.h"
#include "engine/weights.h"

namespace recur {

class ThreadPool;

struct VisionConfig {
  int image_size = 64;  // the square side images are resized to
  int patch = 16;
  int dim = 256;
  int n_layers = 4;
  int n_heads = 4;
  int ffn_dim = 1024;
  int out_dim = 768;  // the language model's hidden size
  float rms_eps = 1e-5f;

  int patches_per_side() const { return image_size / patch; }
  int num_patches() const { return patches_per_side() * patches_per_side(); }
  int head_dim() const { return dim / n_heads; }
};

// Checks divisibility and ranges; errors name the field.
Status validate_vision_config(const VisionConfig& c);

// Random seeded weights as a GGUF file in memory (F32), and written to a path.
Result<gguf::Writer> synthetic_vision_encoder(const VisionConfig& config, uint64_t seed);

// The embedded default: VisionConfig{} projecting to `out_dim` (the language model's hidden size;
// 768 for the default model), seed 1, written once into the model cache next to the default
// language model (model_cache.h).
Result<std::string> default_vision_encoder_path(int out_dim = 768);

class VisionEncoder {
 public:
  static Result<std::unique_ptr<VisionEncoder>> load(const std::string& path);
  static Result<std::unique_ptr<VisionEncoder>> from_file(gguf::File file);

  const VisionConfig& config() const { return config_; }
  // [num_patches, out_dim] row-major. pool may be null (this thread).
  Result<std::vector<float>> encode(const RgbImage& image, ThreadPool* pool) const;
  // The preprocessing alone: [3, image_size, image_size] floats in [-1, 1] (tests).
  Result<std::vector<float>> preprocess(const RgbImage& image) const;

 private:
  struct Layer {
    Weight attn_norm, wq, wk, wv, wo, ffn_norm, gate, up, down;
  };
  VisionEncoder() = default;
  gguf::File file_;
  VisionConfig config_;
  Weight patch_embd_, pos_embd_, post_norm_, proj_;
  std::vector<Layer> layers_;
};

}  // namespace recur
