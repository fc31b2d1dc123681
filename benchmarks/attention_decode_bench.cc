// Paged attention decode (kernels/attention/attention.h): GB/s of KV bytes read, per cache dtype
// and ISA path, at context 1k..32k, against the scalar path over an f32 cache in the same run.
//
//   build/benchmarks/bench_attention_decode [--runs N] [--sample-ms M] [--threads T] [--split-k S]
//                                           [--ctx 1024,2048,...] [--batch B] [--hq 32] [--hkv 8]
//                                           [--dim 128] [--page 16]
//
// One layer; B sequences of `ctx` tokens each, appended round-robin so page tables interleave.
// For each context, each run times every (dtype, path) pair once in a rotated order (machine
// drift hits all alike), each sample repeating decode() for at least --sample-ms. Reports the
// median time per call with [min .. max] over the runs, GB/s of KV bytes read (values plus int8
// scales; the whole cache is read once per call) and the fraction of recur::machine_roofline()'s
// read bandwidth for the thread count, and the speedup against scalar/f32 in the same run.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_timing.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/attention/attention.h"
#include "kernels/attention/kv_cache.h"
#include "probe/sysinfo.h"
#include "bench_args.h"

namespace {

using namespace recur;
using namespace recur::kernels::attention;

struct Options {
  int runs = 5;
  double sample_ms = 20;
  int threads = 1;
  int split_k = 1;
  std::vector<int> ctx = {1024, 2048, 4096, 8192, 16384, 32768};
  int batch = 1, hq = 32, hkv = 8, dim = 128, page = 16;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return bench::flag_value(argc, argv, i, "bench_attention_decode"); };
    if (a == "--runs") o.runs = std::max(1, std::atoi(next()));
    else if (a == "--sample-ms") o.sample_ms = std::atof(next());
    else if (a == "--threads") o.threads = std::max(1, std::atoi(next()));
    else if (a == "--split-k") o.split_k = std::max(0, std::atoi(next()));
    else if (a == "--ctx") o.ctx = bench::int_list(next());
    else if (a == "--batch") o.batch = std::max(1, std::atoi(next()));
    else if (a == "--hq") o.hq = std::max(1, std::atoi(next()));
    else if (a == "--hkv") o.hkv = std::max(1, std::atoi(next()));
    else if (a == "--dim") o.dim = std::max(1, std::atoi(next()));
    else if (a == "--page") o.page = std::max(1, std::atoi(next()));
    else {
      std::fprintf(stderr,
                   "usage: bench_attention_decode [--runs N] [--sample-ms M] [--threads T] [--split-k S] [--ctx a,b] "
                   "[--batch B] [--hq H] [--hkv H] [--dim D] [--page P]\n");
      std::exit(2);
    }
  }
  return o;
}

[[noreturn]] void die(const Error& e) {
  std::fprintf(stderr, "bench_attention_decode: %s\n", e.to_string().c_str());
  std::exit(1);
}

struct Layer {
  KvDType dtype;
  std::unique_ptr<PagedKvCache> cache;
  std::vector<int> ids;
  double bytes = 0;  // KV bytes one decode reads
};

Layer make_layer(KvDType dtype, const Options& o, int ctx) {
  const int64_t pages = int64_t(o.batch) * ((ctx + o.page - 1) / o.page);
  auto made = PagedKvCache::create(
      {.kv_heads = o.hkv, .head_dim = o.dim, .page_size = o.page, .num_pages = pages, .layer_dtypes = {dtype}});
  if (!made) die(made.error());
  Layer l{dtype, std::make_unique<PagedKvCache>(std::move(*made)), {}, 0};
  if (dtype == KvDType::kFP8E4M3) {
    const std::vector<float> s(size_t(o.hkv), 4.0f / 448.0f);
    if (auto st = l.cache->set_fp8_scales(0, s, s); !st) die(st.error());
  }
  for (int b = 0; b < o.batch; ++b) l.ids.push_back(*l.cache->add_sequence());
  const size_t row = size_t(o.hkv) * size_t(o.dim);
  std::vector<float> k(row), v(row);
  uint64_t state = 12345;
  auto next = [&]() {  // cheap deterministic values in [-1, 1)
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return float(int64_t(state >> 40) - (int64_t(1) << 23)) / float(1 << 23);
  };
  for (int t = 0; t < ctx; ++t)
    for (int b = 0; b < o.batch; ++b) {
      for (size_t i = 0; i < row; ++i) {
        k[i] = next();
        v[i] = next();
      }
      if (auto st = l.cache->append(l.ids[size_t(b)], 0, k, v); !st) die(st.error());
    }
  l.bytes = double(o.batch) * double(ctx) * double(l.cache->token_bytes(0));
  return l;
}

struct Candidate {
  const Layer* layer;
  Isa isa;
  std::vector<double> seconds;  // per call, one per run
};

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  auto setup = bench::bench_setup(opt.threads);
  if (!setup) die(setup.error());
  const Roofline* roof = &setup->roof;
  std::unique_ptr<ThreadPool> pool = std::move(setup->pool);
  const double roof_bw = bench::read_roof_gbps(*roof, pool->size());
  fmt::print("# bench_attention_decode: {} threads, B {}, HQ {}, HKV {}, D {}, page {}, split_k {}, {} runs, sample {} ms\n",
             pool->size(), opt.batch, opt.hq, opt.hkv, opt.dim, opt.page, opt.split_k, opt.runs, opt.sample_ms);
  fmt::print("# roofline: read bandwidth {:.1f} GB/s ({} threads; 1 thread {:.1f}, all {:.1f}); detected isa {}\n\n", roof_bw,
             pool->size(), roof->read_bw_1t.median, roof->read_bw_all.median, isa_name(detected_isa()));
  fmt::print("| ctx | cache | path | KV MiB | us/call [min..max] | GB/s | BW frac | x scalar/f32 |\n");
  fmt::print("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  std::fflush(stdout);

  const std::vector<float> q = [&] {
    std::vector<float> x(size_t(opt.batch) * size_t(opt.hq) * size_t(opt.dim));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 17) - 8) / 8.0f;
    return x;
  }();
  std::vector<float> out(q.size());
  for (int ctx : opt.ctx) {
    std::vector<Layer> layers;
    for (KvDType t : {KvDType::kF32, KvDType::kBF16, KvDType::kFP8E4M3, KvDType::kI8}) layers.push_back(make_layer(t, opt, ctx));
    std::vector<Candidate> cands;
    cands.push_back({&layers[0], Isa::kScalar, {}});  // the baseline
    for (const Layer& l : layers)
      for (Isa isa : runnable_isas())
        if (!(l.dtype == KvDType::kF32 && isa == Isa::kScalar)) cands.push_back({&l, isa, {}});
    for (int run = 0; run < opt.runs; ++run)
      for (size_t j = 0; j < cands.size(); ++j) {
        Candidate& c = cands[(j + size_t(run)) % cands.size()];
        const AttentionOptions ao{.isa = c.isa, .split_k = opt.split_k};
        auto call = [&] {
          if (auto st = decode(*c.layer->cache, 0, c.layer->ids, q.data(), opt.hq, out.data(), ao, pool.get()); !st) die(st.error());
        };
        c.seconds.push_back(bench::seconds_per_call(call, opt.sample_ms));
      }
    const double base = bench::median(cands[0].seconds);
    for (const Candidate& c : cands) {
      const double med = bench::median(c.seconds);
      const double gbps = c.layer->bytes / med * 1e-9;
      fmt::print("| {} | {} | {} | {:.1f} | {:.1f} [{:.1f}..{:.1f}] | {:.1f} | {:.2f} | {:.2f} |\n", ctx, kv_dtype_name(c.layer->dtype),
                 isa_name(c.isa), c.layer->bytes / (1 << 20), med * 1e6,
                 *std::min_element(c.seconds.begin(), c.seconds.end()) * 1e6,
                 *std::max_element(c.seconds.begin(), c.seconds.end()) * 1e6, gbps, gbps / roof_bw, base / med);
    }
    std::fflush(stdout);
  }
  return 0;
}
