// MLA attention (kernels/mla/mla.h): the blocked absorbed form at each ISA path against the
// scalar absorbed form (one (row, head) at a time), prefill and decode, in one interleaved run.
//
//   build/benchmarks/bench_mla [--runs N] [--sample-ms M] [--threads T] [--tokens 384] [--ctx 384,4096]
//                              [--shapes kimi,gate]
//
// Shapes (heads as the synthetic models scale Kimi-Linear-48B down: 8 heads of a 512-wide model):
//   kimi  H 8, nope 128, rope 64, latent 512, v 128 (Kimi-Linear's per-head MLA widths)
//   gate  H 8, nope 64, rope 32, latent 128, v 64   (the kv-transfer-overlap gate's kimi-linear model)
// Prefill: one sequence, --tokens new rows over an empty f32 latent cache (causal). Decode: one
// new row over --ctx cached latents, batch 1. Each run times every (case, variant) once in a
// rotated order (machine drift hits all alike), each sample repeating the call for at least
// --sample-ms; the median time per call with [min .. max] over the runs, GFLOP/s from the
// absorbed form's work (per (row, head): W_UK^T q 2RN, scores 2(R+E) and the latent sum 2R per
// visible position, W_UV 2VR) and its fraction of recur::machine_roofline()'s fp32 FMA peak for
// the thread count, GB/s of the f32 latents read from the cache (once per call; decode's bound)
// and their fraction of the read bandwidth, and the speedup against scalar absorbed in the
// same run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_args.h"
#include "bench_timing.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/mla/mla.h"
#include "probe/sysinfo.h"

namespace {

using namespace recur;
using namespace recur::kernels;

constexpr const char* kProgram = "bench_mla";

struct Options {
  int runs = 5;
  double sample_ms = 50;
  int threads = 1;
  int tokens = 384;
  std::vector<int> ctx = {384, 4096};
  std::vector<std::string> shapes = {"kimi", "gate"};
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return bench::flag_value(argc, argv, i, kProgram); };
    if (a == "--runs") o.runs = std::max(1, std::atoi(next()));
    else if (a == "--sample-ms") o.sample_ms = std::atof(next());
    else if (a == "--threads") o.threads = std::max(1, std::atoi(next()));
    else if (a == "--tokens") o.tokens = std::max(1, std::atoi(next()));
    else if (a == "--ctx") {
      o.ctx.clear();
      for (const std::string& s : bench::split_list(next())) o.ctx.push_back(std::max(1, std::atoi(s.c_str())));
    } else if (a == "--shapes") o.shapes = bench::split_list(next());
    else {
      std::fprintf(stderr, "usage: %s [--runs N] [--sample-ms M] [--threads T] [--tokens T] [--ctx a,b] [--shapes kimi,gate]\n",
                   kProgram);
      std::exit(2);
    }
  }
  return o;
}

[[noreturn]] void die(const Error& e) {
  std::fprintf(stderr, "%s: %s\n", kProgram, e.to_string().c_str());
  std::exit(1);
}

mla::Dims shape_dims(const std::string& name) {
  if (name == "kimi") return {.heads = 8, .nope = 128, .rope = 64, .rank = 512, .v_dim = 128};
  if (name == "gate") return {.heads = 8, .nope = 64, .rope = 32, .rank = 128, .v_dim = 64};
  std::fprintf(stderr, "%s: shape '%s': expected kimi or gate\n", kProgram, name.c_str());
  std::exit(2);
}

// One timed case: a cache of `len` latents of which the last `rows` are the call's rows.
struct Case {
  std::string label;
  mla::Dims d;
  int64_t len = 0, rows = 0;
  std::unique_ptr<attention::PagedKvCache> cache;
  int seq = 0;
  std::vector<float> q, wk, wv, out;
  double flops = 0;
  double bytes = 0;  // the f32 latents one call reads from the cache (each once)
};

Case make_case(const std::string& shape, const mla::Dims& d, int64_t len, int64_t rows) {
  Case c{.label = fmt::format("{} {} {}", shape, rows > 1 ? "prefill" : "decode", rows > 1 ? rows : len), .d = d,
         .len = len, .rows = rows};
  const int64_t LW = d.latent_width(), P = 16;
  auto made = attention::PagedKvCache::create(
      {.kv_heads = 1, .head_dim = int(LW), .page_size = int(P), .num_pages = (len + P - 1) / P, .keys_only = true});
  if (!made) die(made.error());
  c.cache = std::make_unique<attention::PagedKvCache>(std::move(*made));
  c.seq = *c.cache->add_sequence();
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> row(static_cast<size_t>(LW));
  for (int64_t t = 0; t < len; ++t) {
    for (float& x : row) x = g(rng);
    if (auto st = c.cache->append(c.seq, 0, row, {}); !st) die(st.error());
  }
  auto fill = [&](std::vector<float>& v, int64_t n) {
    v.resize(size_t(n));
    for (float& x : v) x = g(rng) * 0.1f;
  };
  fill(c.q, rows * d.heads * d.q_width());
  fill(c.wk, int64_t(d.heads) * d.rank * d.nope);
  fill(c.wv, int64_t(d.heads) * d.v_dim * d.rank);
  c.out.resize(size_t(rows * d.heads * d.v_dim));
  const double R = d.rank, visible = double(rows) * double(len - rows) + double(rows) * double(rows + 1) / 2;
  c.bytes = double(len) * double(LW) * 4;
  c.flops = double(rows) * d.heads * 2 * R * (d.nope + d.v_dim) + visible * d.heads * 2 * (2 * R + d.rope);
  return c;
}

struct Arm {
  const char* name;
  mla::Variant variant;
  Isa isa;
};

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  auto setup = bench::bench_setup(opt.threads);
  if (!setup) die(setup.error());
  const Roofline* roof = &setup->roof;
  std::unique_ptr<ThreadPool> pool = std::move(setup->pool);
  const double peak = bench::fma_roof_gflops(*roof, pool->size());
  const double bw = bench::read_roof_gbps(*roof, pool->size());
  fmt::print("# {}: {} threads, {} runs, sample {} ms, prefill {} tokens, decode ctx {}\n", kProgram, pool->size(),
             opt.runs, opt.sample_ms, opt.tokens, fmt::join(opt.ctx, ","));
  fmt::print("# roofline ({} threads): fp32 FMA peak {:.1f} GFLOP/s, read bandwidth {:.1f} GB/s; detected isa {}\n\n",
             pool->size(), peak, bw, isa_name(detected_isa()));
  std::vector<Arm> arms = {{"absorbed (scalar)", mla::Variant::kAbsorbed, Isa::kScalar}};
  for (Isa isa : runnable_isas())
    arms.push_back({isa == Isa::kAvx512 ? "blocked_avx512" : isa == Isa::kAvx2 ? "blocked_avx2" : "blocked_scalar",
                    mla::Variant::kBlocked, isa});
  std::vector<Case> cases;
  for (const std::string& s : opt.shapes) {
    const mla::Dims d = shape_dims(s);
    cases.push_back(make_case(s, d, opt.tokens, opt.tokens));
    for (int ctx : opt.ctx) cases.push_back(make_case(s, d, ctx, 1));
  }
  // seconds[case][arm]: one per run.
  std::vector<std::vector<std::vector<double>>> seconds(cases.size(), std::vector<std::vector<double>>(arms.size()));
  const size_t slots = cases.size() * arms.size();
  for (int run = 0; run < opt.runs; ++run)
    for (size_t j = 0; j < slots; ++j) {
      const size_t k = (j + size_t(run)) % slots, ci = k / arms.size(), ai = k % arms.size();
      Case& c = cases[ci];
      const Arm& a = arms[ai];
      const std::vector<int> seqs{c.seq};
      const std::vector<int64_t> counts{c.rows};
      auto call = [&] {
        const mla::Weights w{c.wk.data(), c.wv.data()};
        if (auto st = mla::attend(*c.cache, 0, seqs, counts, c.q.data(), c.d, w, 0.07f, a.variant, a.isa, c.out.data(),
                                  pool.get());
            !st)
          die(st.error());
      };
      seconds[ci][ai].push_back(bench::seconds_per_call(call, opt.sample_ms));
    }
  fmt::print("| case | variant | ms/call [min..max] | GFLOP/s | FMA frac | latent GB/s | BW frac | x scalar absorbed |\n");
  fmt::print("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const double base = bench::median(seconds[ci][0]);
    for (size_t ai = 0; ai < arms.size(); ++ai) {
      const std::vector<double>& s = seconds[ci][ai];
      const double med = bench::median(s), gflops = cases[ci].flops / med * 1e-9, gbps = cases[ci].bytes / med * 1e-9;
      fmt::print("| {} | {} | {:.3f} [{:.3f}..{:.3f}] | {:.1f} | {:.2f} | {:.1f} | {:.2f} | {:.2f} |\n", cases[ci].label,
                 arms[ai].name, med * 1e3, *std::min_element(s.begin(), s.end()) * 1e3,
                 *std::max_element(s.begin(), s.end()) * 1e3, gflops, gflops / peak, gbps, gbps / bw, base / med);
    }
  }
  return 0;
}
