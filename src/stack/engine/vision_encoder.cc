#include "engine/vision_encoder.h"

#include <algorithm>
#include <cmath>

#include "engine/layers.h"
#include "trace/trace.h"

namespace recur {
namespace {

Result<int> vision_int_key(const gguf::File& f, const char* key) {
  RECUR_ASSIGN_OR_RETURN(int64_t v, f.get_int(key));
  if (v < 0 || v > (int64_t(1) << 30)) return parse_error("{}: '{}' is {}; expected 0 to 2^30", f.source(), key, v);
  return int(v);
}

// Bilinear sample of channel ch at (x, y) in source pixel coordinates (pixel centers at +0.5).
float vision_bilinear(const RgbImage& im, int x0, int y0, int side, float sx, float sy, int ch) {
  const float fx = std::clamp(sx - 0.5f, 0.0f, float(side - 1));
  const float fy = std::clamp(sy - 0.5f, 0.0f, float(side - 1));
  const int ix = int(fx), iy = int(fy);
  const int jx = std::min(ix + 1, side - 1), jy = std::min(iy + 1, side - 1);
  const float ax = fx - float(ix), ay = fy - float(iy);
  auto at = [&](int x, int y) { return float(im.pixels[(size_t(y0 + y) * size_t(im.width) + size_t(x0 + x)) * 3 + size_t(ch)]); };
  const float top = at(ix, iy) * (1 - ax) + at(jx, iy) * ax;
  const float bottom = at(ix, jy) * (1 - ax) + at(jx, jy) * ax;
  return top * (1 - ay) + bottom * ay;
}

}  // namespace

Result<std::unique_ptr<VisionEncoder>> VisionEncoder::load(const std::string& path) {
  RECUR_ASSIGN_OR_RETURN(gguf::File f, gguf::read(path));
  return from_file(std::move(f));
}

Result<std::unique_ptr<VisionEncoder>> VisionEncoder::from_file(gguf::File file) {
  RECUR_ASSIGN_OR_RETURN(std::string arch, file.get_string("general.architecture"));
  if (arch != "recur-vision")
    return parse_error("{}: general.architecture is '{}'; expected 'recur-vision'", file.source(), arch);
  std::unique_ptr<VisionEncoder> e(new VisionEncoder());
  VisionConfig& c = e->config_;
  RECUR_ASSIGN_OR_RETURN(c.image_size, vision_int_key(file, "vision.image_size"));
  RECUR_ASSIGN_OR_RETURN(c.patch, vision_int_key(file, "vision.patch_size"));
  RECUR_ASSIGN_OR_RETURN(c.dim, vision_int_key(file, "vision.embedding_length"));
  RECUR_ASSIGN_OR_RETURN(c.n_layers, vision_int_key(file, "vision.block_count"));
  RECUR_ASSIGN_OR_RETURN(c.n_heads, vision_int_key(file, "vision.attention.head_count"));
  RECUR_ASSIGN_OR_RETURN(c.ffn_dim, vision_int_key(file, "vision.feed_forward_length"));
  RECUR_ASSIGN_OR_RETURN(c.out_dim, vision_int_key(file, "vision.projection_dim"));
  RECUR_ASSIGN_OR_RETURN(double eps, file.get_float("vision.attention.layer_norm_rms_epsilon"));
  c.rms_eps = float(eps);
  if (auto s = validate_vision_config(c); !s) return unexpected(s.error().with_context(file.source()));
  e->file_ = std::move(file);
  const gguf::File& f = e->file_;
  RECUR_ASSIGN_OR_RETURN(e->patch_embd_, bind_weight(f, "v.patch_embd.weight", c.dim, 3 * int64_t(c.patch) * c.patch));
  RECUR_ASSIGN_OR_RETURN(e->pos_embd_, bind_weight(f, "v.pos_embd.weight", c.num_patches(), c.dim));
  RECUR_ASSIGN_OR_RETURN(e->post_norm_, bind_weight(f, "v.post_norm.weight", 1, c.dim));
  RECUR_ASSIGN_OR_RETURN(e->proj_, bind_weight(f, "v.proj.weight", c.out_dim, c.dim));
  for (int l = 0; l < c.n_layers; ++l) {
    const std::string p = fmt::format("v.blk.{}.", l);
    Layer L;
    RECUR_ASSIGN_OR_RETURN(L.attn_norm, bind_weight(f, p + "attn_norm.weight", 1, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.wq, bind_weight(f, p + "attn_q.weight", c.dim, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.wk, bind_weight(f, p + "attn_k.weight", c.dim, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.wv, bind_weight(f, p + "attn_v.weight", c.dim, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.wo, bind_weight(f, p + "attn_out.weight", c.dim, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.ffn_norm, bind_weight(f, p + "ffn_norm.weight", 1, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.gate, bind_weight(f, p + "ffn_gate.weight", c.ffn_dim, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.up, bind_weight(f, p + "ffn_up.weight", c.ffn_dim, c.dim));
    RECUR_ASSIGN_OR_RETURN(L.down, bind_weight(f, p + "ffn_down.weight", c.dim, c.ffn_dim));
    e->layers_.push_back(std::move(L));
  }
  return e;
}

Result<std::vector<float>> VisionEncoder::preprocess(const RgbImage& im) const {
  if (im.width < 1 || im.height < 1 || im.pixels.size() != size_t(im.width) * size_t(im.height) * 3)
    return invalid_argument("vision encoder: image {}x{} with {} bytes; expected width * height * 3 bytes", im.width,
                            im.height, im.pixels.size());
  const int n = config_.image_size;
  const int side = std::min(im.width, im.height);  // center crop to a square
  const int x0 = (im.width - side) / 2, y0 = (im.height - side) / 2;
  const float scale = float(side) / float(n);
  std::vector<float> out(size_t(3) * n * n);
  for (int ch = 0; ch < 3; ++ch)
    for (int y = 0; y < n; ++y)
      for (int x = 0; x < n; ++x) {
        const float v = vision_bilinear(im, x0, y0, side, (float(x) + 0.5f) * scale, (float(y) + 0.5f) * scale, ch);
        out[(size_t(ch) * n + size_t(y)) * n + size_t(x)] = v / 127.5f - 1.0f;
      }
  return out;
}

Result<std::vector<float>> VisionEncoder::encode(const RgbImage& image, ThreadPool* pool) const {
  const VisionConfig& c = config_;
  RECUR_ZONE("vision_encode");
  zone.arg("width", int64_t(image.width));
  zone.arg("height", int64_t(image.height));
  RECUR_ASSIGN_OR_RETURN(std::vector<float> pixels, preprocess(image));
  const int P = c.num_patches(), side = c.patches_per_side(), n = c.image_size, p = c.patch;
  const int64_t D = c.dim, patch_len = 3 * int64_t(p) * p;
  std::vector<float> x(size_t(P * D)), h(size_t(P * D));
  {
    RECUR_ZONE("vision_patch_embed");
    zone.arg("patches", int64_t(P));
    zone.arg("dim", D);
    std::vector<float> patches(size_t(P * patch_len));
    for (int py = 0; py < side; ++py)
      for (int px = 0; px < side; ++px) {
        float* dst = patches.data() + size_t(py * side + px) * size_t(patch_len);
        for (int ch = 0; ch < 3; ++ch)
          for (int y = 0; y < p; ++y)
            for (int xx = 0; xx < p; ++xx)
              *dst++ = pixels[(size_t(ch) * n + size_t(py * p + y)) * n + size_t(px * p + xx)];
      }
    matmul(patch_embd_, patches.data(), P, x.data(), pool);
    std::vector<float> pos(static_cast<size_t>(D));
    for (int i = 0; i < P; ++i) {
      pos_embd_.dequantize_row(i, pos.data());
      for (int64_t d = 0; d < D; ++d) x[size_t(i * D + d)] += pos[size_t(d)];
    }
  }
  std::vector<float> q(size_t(P * D)), k(size_t(P * D)), v(size_t(P * D)), att(size_t(P * D)), o(size_t(P * D));
  std::vector<float> gate(size_t(P) * size_t(c.ffn_dim)), up(gate.size()), norm_scratch(static_cast<size_t>(D));
  std::vector<float> att_scratch(size_t(c.n_heads) * size_t(P));
  auto norm_rows = [&](const Weight& w) {
    for (int i = 0; i < P; ++i) rmsnorm(h.data() + i * D, x.data() + i * D, w, c.dim, c.rms_eps, norm_scratch.data());
  };
  for (int l = 0; l < c.n_layers; ++l) {
    RECUR_ZONE("vision_layer");
    zone.arg("layer", int64_t(l));
    zone.arg("patches", int64_t(P));
    zone.arg("dim", D);
    const Layer& L = layers_[size_t(l)];
    norm_rows(L.attn_norm);
    matmul(L.wq, h.data(), P, q.data(), pool);
    matmul(L.wk, h.data(), P, k.data(), pool);
    matmul(L.wv, h.data(), P, v.data(), pool);
    // Bidirectional: every patch attends to all patches (a decode step over P cached tokens).
    for (int i = 0; i < P; ++i)
      attention_decode(q.data() + i * D, k.data(), v.data(), c.n_heads, c.n_heads, c.head_dim(), P,
                       att.data() + i * D, att_scratch.data(), nullptr);
    matmul(L.wo, att.data(), P, o.data(), pool);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    norm_rows(L.ffn_norm);
    matmul(L.gate, h.data(), P, gate.data(), pool);
    matmul(L.up, h.data(), P, up.data(), pool);
    swiglu(gate.data(), up.data(), int(gate.size()));
    matmul(L.down, gate.data(), P, o.data(), pool);
    for (size_t i = 0; i < x.size(); ++i) x[i] += o[i];
  }
  RECUR_ZONE_NAMED(proj_zone, "vision_projection");
  proj_zone.arg("patches", int64_t(P));
  proj_zone.arg("out_dim", int64_t(c.out_dim));
  norm_rows(post_norm_);
  std::vector<float> out(size_t(P) * size_t(c.out_dim));
  matmul(proj_, h.data(), P, out.data(), pool);
  return out;
}

}  // namespace recur
