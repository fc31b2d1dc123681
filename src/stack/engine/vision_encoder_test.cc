// The vision encoder (vision_encoder.h) on a tiny config: deterministic, finite, output rows
// near RMS 1 (the token embeddings' scale), GGUF round trip, preprocessing against hand values.
#include "engine/vision_encoder.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/thread_pool.h"
#include "trace/trace.h"

namespace recur {
namespace {

VisionConfig tiny_vision_config() {
  VisionConfig c;
  c.image_size = 32;
  c.patch = 8;
  c.dim = 32;
  c.n_layers = 2;
  c.n_heads = 2;
  c.ffn_dim = 64;
  c.out_dim = 48;
  return c;
}

std::unique_ptr<VisionEncoder> tiny_encoder(std::vector<std::byte>& storage, uint64_t seed = 5) {
  auto w = synthetic_vision_encoder(tiny_vision_config(), seed);
  EXPECT_TRUE(w.has_value());
  storage = w->serialize();
  auto f = gguf::parse(storage, "vision.gguf");
  EXPECT_TRUE(f.has_value());
  auto e = VisionEncoder::from_file(std::move(*f));
  EXPECT_TRUE(e.has_value()) << (e ? "" : e.error().message());
  return std::move(*e);
}

RgbImage test_picture(int w, int h) {
  RgbImage im{w, h, std::vector<uint8_t>(size_t(w * h * 3))};
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) im.pixels[size_t((y * w + x) * 3 + c)] = uint8_t((x * 7 + y * 13 + c * 50) % 256);
  return im;
}

TEST(VisionEncoder, DeterministicFiniteAndOnTheEmbeddingScale) {
  std::vector<std::byte> storage;
  auto e = tiny_encoder(storage);
  const VisionConfig& c = e->config();
  EXPECT_EQ(c.num_patches(), 16);
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  auto a = e->encode(test_picture(40, 30), nullptr);
  auto b = e->encode(test_picture(40, 30), pool->get());
  ASSERT_TRUE(a.has_value() && b.has_value());
  ASSERT_EQ(a->size(), size_t(c.num_patches() * c.out_dim));
  EXPECT_EQ(*a, *b);  // the thread count never changes results
  for (int p = 0; p < c.num_patches(); ++p) {
    double ss = 0;
    for (int d = 0; d < c.out_dim; ++d) {
      const float v = (*a)[size_t(p * c.out_dim + d)];
      ASSERT_TRUE(std::isfinite(v));
      ss += double(v) * v;
    }
    const double rms = std::sqrt(ss / c.out_dim);
    EXPECT_GT(rms, 0.3) << "patch " << p;
    EXPECT_LT(rms, 3.0) << "patch " << p;
  }
  // Different images give different embeddings; a different seed, different weights.
  auto other = e->encode(test_picture(20, 20), nullptr);
  ASSERT_TRUE(other.has_value());
  EXPECT_NE(*a, *other);
  std::vector<std::byte> storage2;
  auto e2 = tiny_encoder(storage2, 6);
  EXPECT_NE(*a, *e2->encode(test_picture(40, 30), nullptr));
}

TEST(VisionEncoder, PreprocessCropsResizesAndScales) {
  std::vector<std::byte> storage;
  auto e = tiny_encoder(storage);
  // A uniform image stays uniform: 0 -> -1, 255 -> 1.
  RgbImage white{7, 3, std::vector<uint8_t>(7 * 3 * 3, 255)};
  auto w = e->preprocess(white);
  ASSERT_TRUE(w.has_value());
  for (float v : *w) EXPECT_FLOAT_EQ(v, 1.0f);
  // 64x32: the center 32x32 square is taken at scale 1, so pixels map one to one.
  RgbImage wide = test_picture(64, 32);
  auto p = e->preprocess(wide);
  ASSERT_TRUE(p.has_value());
  for (int y : {0, 5, 31})
    for (int x : {0, 17, 31}) {
      const float want = float(wide.pixels[size_t((y * 64 + x + 16) * 3 + 1)]) / 127.5f - 1.0f;
      EXPECT_FLOAT_EQ((*p)[size_t((1 * 32 + y) * 32 + x)], want) << x << "," << y;
    }
  RgbImage broken{4, 4, std::vector<uint8_t>(5)};
  EXPECT_FALSE(e->encode(broken, nullptr).has_value());
}

TEST(VisionEncoder, EachLayerIsATraceZoneWithItsIndexAndShape) {
  std::vector<std::byte> storage;
  auto e = tiny_encoder(storage);
  trace::reset();
  trace::set_enabled(true);
  ASSERT_TRUE(e->encode(test_picture(8, 8), nullptr).has_value());
  trace::set_enabled(false);
  const trace::EventTable t = trace::capture();
  std::vector<int64_t> layers;
  int encodes = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t.name(i) == "vision_encode") ++encodes;
    if (t.name(i) != "vision_layer") continue;
    const trace::Arg* layer = t.find_arg(i, "layer");
    const trace::Arg* patches = t.find_arg(i, "patches");
    ASSERT_TRUE(layer != nullptr && patches != nullptr);
    EXPECT_EQ(patches->i, 16);
    layers.push_back(layer->i);
  }
  trace::reset();
  EXPECT_EQ(encodes, 1);
  EXPECT_EQ(layers, (std::vector<int64_t>{0, 1}));
}

TEST(VisionEncoder, RejectsAFileOfAnotherArchitecture) {
  gguf::Writer w;
  w.set("general.architecture", gguf::Value::of_string("llama"));
  auto bytes = w.serialize();
  auto f = gguf::parse(bytes, "m.gguf");
  ASSERT_TRUE(f.has_value());
  auto e = VisionEncoder::from_file(std::move(*f));
  ASSERT_FALSE(e.has_value());
  EXPECT_NE(e.error().message().find("expected 'recur-vision'"), std::string::npos);
}

}  // namespace
}  // namespace recur
