// Latency of the embedded default vision encoder (engine/vision_encoder.h) per image: preprocess
// (crop + bilinear resize) plus the forward, for several input sizes and thread counts.
// Configurations are interleaved within each round; each round times `--reps` encodes and keeps
// their mean; the report gives the median and [min, max] over `--rounds` rounds, with the
// weight bytes and FLOPs of one image and the rates they imply (at 16 patches the GEMMs have
// M = 16 rows, so the weights are streamed once per image: a bandwidth roofline applies).
//
//   bench_vision_encode [--rounds 7] [--reps 20] [--threads 1,2] [--sizes 64x64,256x256,1024x768]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "../benchmarks/bench_args.h"
#include "core/thread_pool.h"
#include "engine/vision_encoder.h"

namespace {

using recur::RgbImage;

RgbImage bench_picture(int w, int h) {
  RgbImage im{w, h, std::vector<uint8_t>(size_t(w) * size_t(h) * 3)};
  for (size_t i = 0; i < im.pixels.size(); ++i) im.pixels[i] = uint8_t(i * 2654435761u >> 24);
  return im;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 7, reps = 20;
  std::vector<std::string> thread_list = {"1", "2"}, sizes = {"64x64", "256x256", "1024x768"};
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(recur::bench::flag_value(argc, argv, i, argv[0]));
    else if (!std::strcmp(argv[i], "--reps")) reps = std::atoi(recur::bench::flag_value(argc, argv, i, argv[0]));
    else if (!std::strcmp(argv[i], "--threads")) thread_list = recur::bench::split_list(recur::bench::flag_value(argc, argv, i, argv[0]));
    else if (!std::strcmp(argv[i], "--sizes")) sizes = recur::bench::split_list(recur::bench::flag_value(argc, argv, i, argv[0]));
    else {
      std::fprintf(stderr, "usage: %s [--rounds N] [--reps N] [--threads 1,2] [--sizes WxH,...]\n", argv[0]);
      return 2;
    }
  }
  auto path = recur::default_vision_encoder_path(768);
  if (!path) return std::fprintf(stderr, "%s\n", path.error().to_string().c_str()), 1;
  auto encoder = recur::VisionEncoder::load(*path);
  if (!encoder) return std::fprintf(stderr, "%s\n", encoder.error().to_string().c_str()), 1;
  const recur::VisionConfig& c = (*encoder)->config();
  const double P = c.num_patches(), D = c.dim, F = c.ffn_dim, pp = 3.0 * c.patch * c.patch;
  const double weights = 4.0 * (D * pp + P * D + c.n_layers * (4 * D * D + 3 * D * F + 2 * D) + D + c.out_dim * D);
  const double flops = 2 * P * D * pp + c.n_layers * (2 * P * (4 * D * D + 3 * D * F) + 4 * P * P * D) +
                       2 * P * D * c.out_dim;
  std::printf("vision encoder %s: %d patches, dim %d, %d layers, ffn %d, out %d; %.2f MB weights, %.1f MFLOP per image\n",
              path->c_str(), c.num_patches(), c.dim, c.n_layers, c.ffn_dim, c.out_dim, weights / 1e6, flops / 1e6);
  struct Config {
    std::string size;
    int threads;
    RgbImage image;
    std::unique_ptr<recur::ThreadPool> pool;
    std::vector<double> ms;
  };
  std::vector<Config> configs;
  for (const std::string& s : sizes)
    for (const std::string& t : thread_list) {
      int w = 0, h = 0;
      if (std::sscanf(s.c_str(), "%dx%d", &w, &h) != 2 || w < 1 || h < 1) return std::fprintf(stderr, "bad size %s\n", s.c_str()), 2;
      const int threads = std::atoi(t.c_str());
      auto pool = recur::ThreadPool::create({.threads = threads, .pin = false});
      if (!pool) return 1;
      configs.push_back({s, threads, bench_picture(w, h), std::move(*pool), {}});
    }
  for (auto& cfg : configs) (void)(*encoder)->encode(cfg.image, cfg.pool.get());  // warm up
  for (int r = 0; r < rounds; ++r)
    for (auto& cfg : configs) {
      const auto t0 = std::chrono::steady_clock::now();
      for (int k = 0; k < reps; ++k)
        if (!(*encoder)->encode(cfg.image, cfg.pool.get())) return 1;
      cfg.ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() / reps);
    }
  std::printf("%-10s %7s %10s %22s %10s %10s\n", "image", "threads", "median ms", "[min .. max] ms", "GB/s wts", "GFLOP/s");
  for (auto& cfg : configs) {
    std::sort(cfg.ms.begin(), cfg.ms.end());
    const size_t n = cfg.ms.size();
    const double median = n % 2 ? cfg.ms[n / 2] : (cfg.ms[n / 2 - 1] + cfg.ms[n / 2]) / 2;
    std::printf("%-10s %7d %10.3f %10.3f .. %8.3f %10.2f %10.2f\n", cfg.size.c_str(), cfg.threads, median,
                cfg.ms.front(), cfg.ms.back(), weights / (median * 1e-3) / 1e9, flops / (median * 1e-3) / 1e9);
  }
  return 0;
}
