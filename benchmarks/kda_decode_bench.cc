// KDA decode step: every variant against `vtile`, plain and ReplaySSM, in one interleaved run.
//
//   build/benchmarks/bench_kda_decode [--runs N] [--sample-ms M] [--threads T] [--window L]
//                                     [--block-v BV] [--hv 16,32,64] [--batch 1,8,32] [--spin-us S]
//
// The pool polls --spin-us (default 200, the engine's engine.pool_spin_us) before sleeping, as
// the engine's does: with sleeping waits every dispatch at batch 1 pays a 75-80 us worker
// wake-up, and variants with more dispatches per step lose for that reason alone.
// For each (HV, batch) with K = V = 128, HK = HV, softplus gate, block_v BV (64) and for each mode
// (plain, replay with window L), each run times every variant back to back in a rotated
// order over a whole number of windows of steps, so machine drift hits all variants alike and
// every ReplaySSM sample contains the same number of flushes. Reports the median time per step
// with [min .. max] over the runs, the speedup against vtile in the same run, bytes moved and
// FLOPs from the cost model (kda_cost.h) and their roofline fractions against
// recur::machine_roofline() (read bandwidth and fp32 FMA peak on all threads), and the bandwidth
// fraction paired run by run against an in-run read peak (bench_peaks.h): the sysinfo sum-read
// of a state-sized window of a 256 MiB buffer, timed as one more arm of the rotation.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_peaks.h"
#include "core/aligned_buffer.h"
#include "core/clock.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/kda/kda.h"
#include "kernels/kda/kda_cost.h"
#include "kernels/kda/kda_replay.h"
#include "probe/sysinfo.h"
#include "bench_args.h"
#include "bench_timing.h"

namespace {

using namespace recur;
using namespace recur::kda;

struct Options {
  int runs = 7;
  double sample_ms = 25;
  int threads = 0;
  int spin_us = 200;  // the engine's default (engine.pool_spin_us)
  int window = 16;
  int block_v = 64;
  std::vector<int> hv = {16, 32, 64};
  std::vector<int> batch = {1, 8, 32};
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return bench::flag_value(argc, argv, i, "bench_kda_decode"); };
    if (a == "--runs") o.runs = std::max(1, std::atoi(next()));
    else if (a == "--sample-ms") o.sample_ms = std::atof(next());
    else if (a == "--threads") o.threads = std::atoi(next());
    else if (a == "--spin-us") o.spin_us = std::atoi(next());
    else if (a == "--window") o.window = std::max(1, std::atoi(next()));
    else if (a == "--block-v") o.block_v = std::max(1, std::atoi(next()));
    else if (a == "--hv") o.hv = bench::int_list(next());
    else if (a == "--batch") o.batch = bench::int_list(next());
    else {
      std::fprintf(stderr, "usage: bench_kda_decode [--runs N] [--sample-ms M] [--threads T] [--window L] [--block-v BV] [--hv a,b] [--batch a,b] [--spin-us S]\n");
      std::exit(2);
    }
  }
  return o;
}

struct Data {
  Shape shape;
  Params params;
  std::vector<float> q, k, v, g, b, a_log, dt_bias, state;
  Inputs inputs() const {
    return Inputs{q.data(), k.data(), v.data(), g.data(), b.data(), a_log.data(), dt_bias.data()};
  }
};

Data make_data(const Shape& s, const Params& p) {
  Data d{s, p, {}, {}, {}, {}, {}, {}, {}, {}};
  std::mt19937_64 rng(1);
  std::normal_distribution<float> n01(0.0f, 1.0f);
  auto fill = [&](std::vector<float>& x, size_t n, float sd) {
    x.resize(n);
    for (auto& e : x) e = sd * n01(rng);
  };
  fill(d.q, size_t(s.batch * s.hk * s.k), 1);
  fill(d.k, size_t(s.batch * s.hk * s.k), 1);
  fill(d.v, size_t(s.batch * s.hv * s.v), 1);
  fill(d.g, size_t(s.batch * s.hv * s.k), 1.5f);
  fill(d.b, size_t(s.batch * s.hv), 2);
  fill(d.a_log, size_t(s.hv), 0.5f);
  fill(d.dt_bias, size_t(s.hv * s.k), 1);
  fill(d.state, size_t(s.batch * s.hv * s.k * s.v), 0.3f);
  return d;
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parse(argc, argv);
  auto roof = machine_roofline();
  if (!roof) {
    std::fprintf(stderr, "bench_kda_decode: roofline: %s\n", roof.error().to_string().c_str());
    return 1;
  }
  auto pool_r = ThreadPool::create({.threads = opt.threads, .pin = true, .spin_us = opt.spin_us});
  if (!pool_r) {
    std::fprintf(stderr, "bench_kda_decode: %s\n", pool_r.error().to_string().c_str());
    return 1;
  }
  std::unique_ptr<ThreadPool> pool = std::move(*pool_r);
  // The in-run read peak: the sysinfo sum-read over the next state-sized window of a 256 MiB
  // buffer (so from DRAM, like a state that does not fit the caches), timed as one more arm.
  AlignedBuffer peak_buf(size_t(256) << 20);
  std::memset(peak_buf.data(), 1, peak_buf.size());
  size_t peak_off = 0;
  const double bw = bench::read_roof_gbps(*roof, pool->size());
  const double fl = bench::fma_roof_gflops(*roof, pool->size());
  fmt::print("# bench_kda_decode: isa {}, {} threads (pool polls {} us before sleeping, as the engine's), K=V=128, "
             "HK=HV, softplus gate, block_v {}, window {}, {} runs\n",
             isa_name(active_isa()), pool->size(), opt.spin_us, opt.block_v, opt.window, opt.runs);
  fmt::print("# roofline: read bandwidth {:.1f} GB/s, fp32 FMA {:.1f} GFLOP/s ({} threads)\n\n", bw, fl,
             pool->size());
  fmt::print("| mode | HV | B | state MiB | variant | us/step [min..max] | x vtile | GB/s | BW frac | BW frac in-run "
             "(paired) | GFLOP/s | FLOP frac |\n");
  fmt::print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");

  const auto& variants = kAllDecodeVariants;
  constexpr int kVariants = int(std::size(kAllDecodeVariants));
  for (int hv : opt.hv) {
    for (int batch : opt.batch) {
      const Shape shape{.batch = batch, .tokens = 1, .hk = hv, .hv = hv, .k = 128, .v = 128};
      const Params params{.gate = GateForm::kSoftplus, .block_v = opt.block_v};
      for (bool replay : {false, true}) {
        Data d = make_data(shape, params);
        // One state / cache per variant so each sees its own steady state.
        std::vector<std::vector<float>> states(kVariants, d.state);
        std::vector<ReplayCache> caches;
        if (replay) {
          for (int i = 0; i < kVariants; ++i) {
            auto c = ReplayCache::create(shape, params.layout, opt.window);
            if (!c) {
              std::fprintf(stderr, "bench_kda_decode: %s\n", c.error().to_string().c_str());
              return 1;
            }
            c->reset(d.state.data());
            caches.push_back(std::move(*c));
          }
        }
        std::vector<float> out(size_t(batch * hv * 128));
        Workspace ws;
        auto step = [&](int vi) {
          Status st = replay ? replay_step(caches[size_t(vi)], shape, params, d.inputs(), out.data(),
                                           variants[vi], pool.get(), ws)
                             : decode(shape, params, d.inputs(), states[size_t(vi)].data(), out.data(),
                                      variants[vi], pool.get(), ws);
          if (!st) {
            std::fprintf(stderr, "bench_kda_decode: %s\n", st.error().to_string().c_str());
            std::exit(1);
          }
        };
        // Steps per sample: a whole number of windows lasting about sample_ms.
        for (int vi = 0; vi < kVariants; ++vi) for (int i = 0; i < opt.window; ++i) step(vi);  // warm-up
        int64_t t0 = now_ns();
        for (int i = 0; i < opt.window; ++i) step(0);
        double window_ms = double(now_ns() - t0) / 1e6;
        int windows = std::max(1, int(opt.sample_ms / std::max(window_ms, 1e-3)));
        int steps = windows * opt.window;
        const size_t state_bytes = d.state.size() * sizeof(float);
        auto peak_step = [&] {
          if (peak_off + state_bytes > peak_buf.size()) peak_off = 0;
          bench::pool_sum_read(pool.get(), peak_buf.data() + peak_off, state_bytes);
          peak_off += state_bytes;
        };
        // Arm kVariants is the in-run read peak.
        std::vector<std::vector<double>> us(kVariants + 1);
        for (int r = 0; r < opt.runs; ++r) {
          for (int j = 0; j <= kVariants; ++j) {
            int vi = (r + j) % (kVariants + 1);
            int64_t s0 = now_ns();
            for (int i = 0; i < steps; ++i) vi == kVariants ? peak_step() : step(vi);
            us[size_t(vi)].push_back(double(now_ns() - s0) / 1e3 / steps);
          }
        }
        const double base = median(us[0]);
        for (int vi = 0; vi < kVariants; ++vi) {
          Cost c = replay ? replay_cost(shape, params, opt.window, hoists_prologue(variants[vi]))
                          : decode_cost(shape, params);
          const double m = median(us[size_t(vi)]);
          const double gbs = c.bytes / (m * 1e3);
          const double gfl = c.flops / (m * 1e3);
          fmt::print("| {} | {} | {} | {:.0f} | {} | {:.1f} [{:.1f}..{:.1f}] | {:.2f} | {:.1f} | {:.2f} | {} | {:.1f} | {:.2f} |\n",
                     replay ? fmt::format("replay L={}", opt.window) : std::string("plain"), hv, batch,
                     double(batch) * hv * 128 * 128 * 4 / (1 << 20), decode_variant_name(variants[vi]), m,
                     *std::min_element(us[size_t(vi)].begin(), us[size_t(vi)].end()),
                     *std::max_element(us[size_t(vi)].begin(), us[size_t(vi)].end()), base / m, gbs,
                     gbs / bw, bench::paired_fraction(c.bytes, us[size_t(vi)], double(state_bytes), us[kVariants]),
                     gfl, gfl / fl);
        }
        fmt::print("| | | | | in-run read peak: {:.1f} GB/s ({} threads, DRAM) | | | | | | | |\n",
                   double(state_bytes) / (median(us[kVariants]) * 1e3), pool->size());
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
