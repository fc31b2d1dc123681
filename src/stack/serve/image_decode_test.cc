// Image decoding (image_decode.h): valid PNG and PPM give their exact pixels; every bad input
// gives an error that names the input and says what was expected.
#include "serve/image_decode.h"

#include <gtest/gtest.h>
#include <png.h>

#include <string>

namespace recur::serve {
namespace {

RgbImage gradient_image(int w, int h) {
  RgbImage im{w, h, std::vector<uint8_t>(size_t(w * h * 3))};
  for (size_t i = 0; i < im.pixels.size(); ++i) im.pixels[i] = uint8_t(i * 37 + 11);
  return im;
}

std::vector<uint8_t> encode_png(const RgbImage& im, uint32_t format = PNG_FORMAT_RGB) {
  png_image p{};
  p.version = PNG_IMAGE_VERSION;
  p.width = uint32_t(im.width);
  p.height = uint32_t(im.height);
  p.format = format;
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&p, nullptr, &size, 0, im.pixels.data(), 0, nullptr));
  std::vector<uint8_t> out(size);
  EXPECT_TRUE(png_image_write_to_memory(&p, out.data(), &size, 0, im.pixels.data(), 0, nullptr));
  out.resize(size);
  return out;
}

std::string base64_of(std::span<const uint8_t> b) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string s;
  for (size_t i = 0; i < b.size(); i += 3) {
    uint32_t v = uint32_t(b[i]) << 16 | (i + 1 < b.size() ? uint32_t(b[i + 1]) << 8 : 0) | (i + 2 < b.size() ? b[i + 2] : 0);
    s += k[v >> 18 & 63];
    s += k[v >> 12 & 63];
    s += i + 1 < b.size() ? k[v >> 6 & 63] : '=';
    s += i + 2 < b.size() ? k[v & 63] : '=';
  }
  return s;
}

std::vector<uint8_t> bytes_of(std::string_view s) { return {s.begin(), s.end()}; }

std::string error_of(const Result<RgbImage>& r) { return r ? std::string("(no error)") : r.error().message(); }

TEST(ImageDecode, Base64RoundTripsAndRejectsBadBytes) {
  for (size_t n : {0u, 1u, 2u, 3u, 4u, 10u}) {
    std::vector<uint8_t> b(n);
    for (size_t i = 0; i < n; ++i) b[i] = uint8_t(i * 91 + 7);
    auto d = decode_base64(base64_of(b), "x");
    ASSERT_TRUE(d.has_value());
    EXPECT_EQ(*d, b);
  }
  auto bad = decode_base64("QUJ*RA==", "img");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message().find("img: base64 byte 3"), std::string::npos) << bad.error().message();
  EXPECT_FALSE(decode_base64("QUJDR", "img").has_value());  // 5 characters: one left over
}

TEST(ImageDecode, PngGivesExactPixels) {
  const RgbImage im = gradient_image(5, 3);
  auto d = decode_png(encode_png(im), "p");
  ASSERT_TRUE(d.has_value()) << error_of(d);
  EXPECT_EQ(d->width, 5);
  EXPECT_EQ(d->height, 3);
  EXPECT_EQ(d->pixels, im.pixels);
  // Gray input comes out as R = G = B.
  RgbImage gray{2, 2, {0, 100, 200, 255}};
  auto g = decode_png(encode_png(gray, PNG_FORMAT_GRAY), "p");
  ASSERT_TRUE(g.has_value()) << error_of(g);
  EXPECT_EQ(g->pixels, (std::vector<uint8_t>{0, 0, 0, 100, 100, 100, 200, 200, 200, 255, 255, 255}));
}

TEST(ImageDecode, PpmBinaryAndTextGiveExactPixels) {
  std::vector<uint8_t> p6 = bytes_of("P6\n# a comment\n2 1\n255\n");
  for (uint8_t v : {1, 2, 3, 250, 251, 252}) p6.push_back(v);
  auto a = decode_ppm(p6, "a");
  ASSERT_TRUE(a.has_value()) << error_of(a);
  EXPECT_EQ(a->pixels, (std::vector<uint8_t>{1, 2, 3, 250, 251, 252}));
  auto b = decode_ppm(bytes_of("P3 1 2 15\n0 15 3\n15 0 15\n"), "b");  // maxval 15 scales to 255
  ASSERT_TRUE(b.has_value()) << error_of(b);
  EXPECT_EQ(b->width, 1);
  EXPECT_EQ(b->height, 2);
  EXPECT_EQ(b->pixels, (std::vector<uint8_t>{0, 255, 51, 255, 0, 255}));
}

TEST(ImageDecode, DataUriPicksTheDecoderByMediaType) {
  const RgbImage im = gradient_image(4, 4);
  auto png = decode_image_data_uri("data:image/png;base64," + base64_of(encode_png(im)), "m");
  ASSERT_TRUE(png.has_value()) << error_of(png);
  EXPECT_EQ(png->pixels, im.pixels);
  std::vector<uint8_t> p6 = bytes_of("P6 1 1 255\n");
  p6.insert(p6.end(), {9, 8, 7});
  auto ppm = decode_image_data_uri("data:image/x-portable-pixmap;base64," + base64_of(p6), "m");
  ASSERT_TRUE(ppm.has_value()) << error_of(ppm);
  EXPECT_EQ(ppm->pixels, (std::vector<uint8_t>{9, 8, 7}));
}

TEST(ImageDecode, BadInputsGiveErrorsThatSayWhatWasExpected) {
  const std::string png64 = base64_of(encode_png(gradient_image(8, 8)));
  struct Case {
    std::string uri;
    std::string expect;
  };
  std::vector<uint8_t> huge = bytes_of("P6 5000 10 255\n");
  std::vector<uint8_t> short_raster = bytes_of("P6 2 2 255\n");
  short_raster.insert(short_raster.end(), {1, 2, 3});
  const std::vector<Case> cases = {
      {"https://example.com/cat.png", "must be a data: URI"},
      {"data:image/png;base64", "expected ','"},
      {"data:image/png," + png64, "expected ';base64'"},
      {"data:image/gif;base64,R0lGOD", "media type 'image/gif' is not supported"},
      {"data:image/png;base64,@@@@", "base64 byte 0 is 0x40"},
      {"data:image/png;base64," + png64.substr(0, png64.size() / 2 / 4 * 4), "pixel data"},  // truncated PNG
      {"data:image/png;base64," + base64_of(bytes_of("P6 1 1 255\n\1\2\3")), "PNG"},        // wrong magic
      {"data:image/x-portable-pixmap;base64," + png64, "expected the magic 'P6'"},
      {"data:image/x-portable-pixmap;base64," + base64_of(huge), "the width is over 4096; expected 1 to 4096"},
      {"data:image/x-portable-pixmap;base64," + base64_of(short_raster), "is truncated"},
      {"data:image/x-portable-pixmap;base64," + base64_of(bytes_of("P3 1 1 255 1 2")), "the file ends"},
      {"data:image/x-portable-pixmap;base64," + base64_of(bytes_of("P3 1 1 100 1 2 300")), "the sample is over 100"},
  };
  for (const Case& c : cases) {
    auto r = decode_image_data_uri(c.uri, "messages[0].content[1]");
    ASSERT_FALSE(r.has_value()) << c.uri.substr(0, 60);
    EXPECT_NE(r.error().message().find("messages[0].content[1]"), std::string::npos) << r.error().message();
    EXPECT_NE(r.error().message().find(c.expect), std::string::npos) << c.expect << " not in: " << r.error().message();
  }
}

}  // namespace
}  // namespace recur::serve
