// GEMM / GEMV: every variant against a baseline in the same run, interleaved, and the
// error-vs-K study of docs/gemm.md.
//
//   build/benchmarks/bench_gemm [--mode gemv|gemm|errors|all] [--runs N] [--sample-ms M]
//                               [--threads T] [--n N] [--k K] [--m M] [--mb 1024] [--cpu-time]
//                               [--variants "packed f32,packed bf16"]
//
// gemv: M = 1 (and --m), N x K weights, every stored format (gemm_stored) and the packed
//   bf16 / w8a8 precisions, against `naive` (the engine's previous per-row loop, kept here
//   verbatim as the baseline). Weights are replicated until they span --mb MiB and each call
//   uses the next copy, so every call streams from DRAM, not from the last-level cache.
// gemm: M x N x K (default 512 x 4096 x 4096) for every precision and algorithm, and every
//   stored format (gemm_stored, the engine's prefill GEMM), against the f32 dot algorithm.
// Both tables end with an in-run peak measured in the same rotated rounds: gemv a sum-read of
// the packed f32 weights themselves (the sysinfo bandwidth loop, split over the threads), gemm
// the sysinfo FMA loop on every thread. BW frac and FLOP frac of fp32 rows divide by those
// (the load of a shared machine divides out); bf16 and int8 rows by the cached dot peaks.
// Each run times every variant back to back in a rotated order (machine drift hits all
// alike); the table gives the median per call with [min .. max] over the runs, the speedup
// against the baseline, and GB/s and GFLOP/s from the cost model (gemm_cost.h) as fractions
// of recur::machine_roofline() (read bandwidth and fp32 FMA on the pool's threads; bf16 and
// int8 precisions also against the bf16-dot and int8-dot peaks scaled by threads).
// errors: max and rms of |y - y64| / sum_k |x w| for every precision, K = 256 .. 8192.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <sys/mman.h>

#include "bench_args.h"
#include "bench_timing.h"
#include "bench_peaks.h"
#include "core/aligned_buffer.h"
#include "core/clock.h"
#include "core/convert.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/gemm/gemm.h"
#include "kernels/gemm/gemm_cost.h"
#include "kernels/gemm/gemm_reference.h"
#include "kernels/gemm/gemm_test_util.h"
#include "probe/roofline_kernels.h"
#include "probe/sysinfo.h"

namespace {

using namespace recur;
using namespace recur::gemm;

struct Opts {
  std::string mode = "all";
  int runs = 7;
  double sample_ms = 60;
  int threads = 2;
  int64_t n = 4096, k = 4096, m = 512, gemv_m = 1;
  double mb = 1024;
  bool cpu_time = false;  // time by process CPU time / threads (robust to other processes)
  std::vector<std::string> variants;  // keep only rows whose name contains one of these
};

bool g_cpu_time = false;
int g_threads = 1;
// Wall-clock ns, or with --cpu-time the process's CPU ns divided by the pool's threads: on a
// machine shared with other jobs this counts only the time our threads actually ran.
int64_t clock_ns() {
  if (!g_cpu_time) return recur::now_ns();
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec) / g_threads;
}

Opts parse(int argc, char** argv) {
  Opts o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return bench::flag_value(argc, argv, i, "bench_gemm"); };
    if (a == "--mode") o.mode = next();
    else if (a == "--runs") o.runs = std::max(1, std::atoi(next()));
    else if (a == "--sample-ms") o.sample_ms = std::atof(next());
    else if (a == "--threads") o.threads = std::atoi(next());
    else if (a == "--n") o.n = std::atoll(next());
    else if (a == "--k") o.k = std::atoll(next());
    else if (a == "--m") o.m = o.gemv_m = std::atoll(next());
    else if (a == "--mb") o.mb = std::atof(next());
    else if (a == "--cpu-time") o.cpu_time = true;
    else if (a == "--variants") o.variants = bench::split_list(next());
    else {
      std::fprintf(stderr,
                   "usage: bench_gemm [--mode gemv|gemm|errors|all] [--runs N] [--sample-ms M] [--threads T] "
                   "[--n N] [--k K] [--m M] [--mb MiB] [--cpu-time] [--variants NAME,...]\n");
      std::exit(2);
    }
  }
  return o;
}

std::vector<float> randn(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& e : v) e = d(rng);
  return v;
}

double median(std::vector<double> x) {
  std::sort(x.begin(), x.end());
  const size_t n = x.size();
  return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

void check(const Status& s) {
  if (!s) {
    std::fprintf(stderr, "bench_gemm: %s\n", s.error().to_string().c_str());
    std::exit(1);
  }
}

// What a row measures: a kernel, or one of the in-run peaks the kernels are divided by.
enum class Role { kKernel, kReadPeak, kFmaPeak };

struct Variant {
  std::string name;
  std::function<void()> call;
  Cost cost;
  double peak_flops = 0;  // the compute roofline this variant is judged against
  Role role = Role::kKernel;
};

// The sysinfo bandwidth loop (a sum-read) over one buffer of `copies` per call, rotated as
// the kernels rotate their weights and split over the pool as they split their rows: the read
// peak of exactly the memory the kernels stream (same pages, same placement).
Variant read_peak(const std::string& what, std::vector<const std::byte*> copies, size_t bytes, ThreadPool* pool) {
  Variant v;
  v.name = fmt::format("sum-read of {} ({} threads): in-run bandwidth peak", what, pool->size());
  v.role = Role::kReadPeak;
  v.cost = {.bytes = double(bytes / 256 * 256), .flops = 0};
  auto next = std::make_shared<size_t>(0);
  v.call = [=] {
    const std::byte* data = copies[*next];
    *next = (*next + 1) % copies.size();
    bench::pool_sum_read(pool, data, bytes);
  };
  return v;
}

// The sysinfo FMA loop on every thread for about `ms`: the in-run fp32 compute peak.
Variant fma_peak(ThreadPool* pool, double ms) {
  int64_t iters = 1 << 16;
  const int64_t t0 = recur::now_ns();
  bench::pool_fma(pool, iters);
  const double took = double(recur::now_ns() - t0) / 1e6;
  iters = std::max<int64_t>(1, int64_t(double(iters) * ms / std::max(took, 1e-3)));
  Variant v;
  v.name = fmt::format("{} chains ({} threads): in-run FMA peak", roofline::kFma.get()->instruction, pool->size());
  v.role = Role::kFmaPeak;
  v.cost = {.bytes = 0, .flops = double(iters) * roofline::kFma.get()->ops_per_iter * pool->size()};
  v.call = [=] { bench::pool_fma(pool, iters); };
  return v;
}

// Times variants interleaved; prints one table row each.
// bw and fma: the cached roofline's peaks, used unless the table has in-run peak rows. fp32
// variants have peak_flops 0 and are judged against the fp32 FMA peak in use.
void run_table(std::vector<Variant> vs, const Opts& o, double bw, double fma, const std::string& shape) {
  // --variants keeps the baseline (row 0), the peaks and the rows whose name contains a filter.
  if (!o.variants.empty()) {
    std::vector<Variant> kept;
    for (size_t i = 0; i < vs.size(); ++i) {
      bool keep = i == 0 || vs[i].role != Role::kKernel;
      for (const std::string& f : o.variants) keep = keep || vs[i].name.find(f) != std::string::npos;
      if (keep) kept.push_back(std::move(vs[i]));
    }
    vs = std::move(kept);
  }
  for (auto& v : vs) v.call();  // warm-up (and first-touch of workspaces)
  std::vector<int> reps(vs.size());
  for (size_t i = 0; i < vs.size(); ++i) {
    const int64_t t0 = clock_ns();
    vs[i].call();
    const double ms = double(clock_ns() - t0) / 1e6;
    reps[i] = std::max(1, int(o.sample_ms / std::max(ms, 1e-3)));
  }
  std::vector<std::vector<double>> us(vs.size());
  for (int r = 0; r < o.runs; ++r) {
    for (size_t j = 0; j < vs.size(); ++j) {
      const size_t i = (size_t(r) + j) % vs.size();
      const int64_t t0 = clock_ns();
      for (int t = 0; t < reps[i]; ++t) vs[i].call();
      us[i].push_back(double(clock_ns() - t0) / 1e3 / reps[i]);
    }
  }
  const double base = median(us[0]);
  // With in-run peak rows, a kernel's fraction is taken run by run against the peak timed in
  // the same run (paired: a slow phase of the machine hits both), and the column shows the
  // median [min .. max] over the runs; otherwise the cached roofline divides the median.
  auto fractions = [&](size_t i, Role role, double cached) {
    const double work = role == Role::kReadPeak ? vs[i].cost.bytes : vs[i].cost.flops;
    for (size_t p = 0; p < vs.size(); ++p) {
      if (vs[p].role != role) continue;
      const double peak_work = role == Role::kReadPeak ? vs[p].cost.bytes : vs[p].cost.flops;
      return bench::paired_fraction(work, us[i], peak_work, us[p]);
    }
    return fmt::format("{:.2f}", work / (median(us[i]) * 1e3) / cached);
  };
  for (size_t i = 0; i < vs.size(); ++i) {
    const double med = median(us[i]);
    const double gbs = vs[i].cost.bytes / (med * 1e3);
    const double gfl = vs[i].cost.flops / (med * 1e3);
    const std::string flop_frac = vs[i].peak_flops > 0 ? fmt::format("{:.2f}", gfl / vs[i].peak_flops)
                                                       : fractions(i, Role::kFmaPeak, fma);
    fmt::print("| {} | {} | {:.1f} [{:.1f} .. {:.1f}] | {:.2f} | {:.1f} | {} | {:.1f} | {} |\n", shape, vs[i].name, med,
               *std::min_element(us[i].begin(), us[i].end()), *std::max_element(us[i].begin(), us[i].end()),
               base / med, gbs, fractions(i, Role::kReadPeak, bw), gfl, flop_frac);
  }
  std::fflush(stdout);
}

// The engine's matvec before this kernel (src/stack/engine/weights.cc at 485d229), the GEMV baseline.
float naive_dot_f32(const float* a, const float* b, int64_t n) {
  float s[8] = {};
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    for (int j = 0; j < 8; ++j) s[j] += a[i + j] * b[i + j];
  float t = 0;
  for (; i < n; ++i) t += a[i] * b[i];
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])) + t;
}
float naive_dot_q8_0(const std::byte* row, const float* x, int64_t n) {
  float total = 0;
  for (int64_t b = 0; b < n / 32; ++b) {
    const std::byte* blk = row + b * 34;
    uint16_t d16;
    std::memcpy(&d16, blk, 2);
    const auto* q = reinterpret_cast<const int8_t*>(blk + 2);
    const float* xb = x + b * 32;
    float s[8] = {};
    for (int i = 0; i < 32; i += 8)
      for (int j = 0; j < 8; ++j) s[j] += float(q[i + j]) * xb[i + j];
    total += fp16_to_fp32(d16) * (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])));
  }
  return total;
}

// w [n, k] in format f (gemm_test_util.h's encoding; kQ8_0R16 / kF16R16: the rows regrouped).
std::vector<std::byte> encode(WeightFormat f, const std::vector<float>& w, int64_t n, int64_t k) {
  if (f != WeightFormat::kQ8_0R16 && f != WeightFormat::kF16R16) return recur::gemm::testing::encode(f, w, n, k);
  const bool q8 = f == WeightFormat::kQ8_0R16;
  const auto rows = recur::gemm::testing::encode(q8 ? WeightFormat::kQ8_0 : WeightFormat::kF16, w, n, k);
  std::vector<std::byte> out(rows.size());
  check(q8 ? repack_q8_0_r16(rows.data(), n, k, out.data()) : repack_f16_r16(rows.data(), n, k, out.data()));
  return out;
}

void bench_gemv(const Opts& o, ThreadPool* pool, const Roofline& roof) {
  const int64_t n = o.n, k = o.k, m = o.gemv_m;
  const double bw = bench::read_roof_gbps(roof, pool->size());
  const double fl = bench::fma_roof_gflops(roof, pool->size());
  auto w = randn(size_t(n * k), 1);
  auto x = randn(size_t(m * k), 2);
  std::vector<float> y(size_t(m * n));
  // Copies of each weight encoding until the set spans o.mb MiB; call i uses copy i % copies.
  auto copies_for = [&](double bytes) { return std::max(1, int(std::ceil(o.mb * 1048576.0 / bytes))); };
  std::vector<Variant> vs;
  // huge: the copies in 2 MiB-aligned buffers madvised for transparent huge pages (as a model
  // file's weights would be if loaded into such memory instead of mapped in 4 KiB pages).
  auto stored = [&](WeightFormat f, bool naive, Activations act = {}, bool huge = false) {
    auto one = encode(f, w, n, k);
    const int copies = copies_for(double(one.size()));
    auto set = std::make_shared<std::vector<AlignedBuffer>>();
    for (int c = 0; c < copies; ++c) {
      constexpr size_t kHuge = size_t(2) << 20;
      set->emplace_back(one.size(), /*zeroed=*/false, huge ? kHuge : 64);
      if (huge) madvise(set->back().data(), (one.size() + kHuge - 1) / kHuge * kHuge, MADV_HUGEPAGE);
      std::memcpy(set->back().data(), one.data(), one.size());
    }
    auto next = std::make_shared<int>(0);
    Variant v;
    v.name = naive ? fmt::format("naive {}", weight_format_name(f))
                   : fmt::format("stored {}{}{}", weight_format_name(f),
                                 f == WeightFormat::kQ8_0   ? fmt::format(" act {}", q8_activations_name(act.q8))
                                 : f == WeightFormat::kF16 || f == WeightFormat::kF16R16
                                     ? fmt::format(" act {}", f16_activations_name(act.f16))
                                                           : "",
                                 huge ? " (huge pages)" : "");
    auto ws = std::make_shared<Workspace>();
    v.cost = stored_cost(f, m, n, k);
    v.peak_flops = 0;  // fp32: the FMA peak in use
    v.call = [=, &x, &y] {
      const std::byte* data = (*set)[size_t(*next)].data();
      *next = (*next + 1) % copies;
      if (naive) {
        const size_t rb = row_bytes(f, k);
        pool->parallel_for(n, [&](int64_t b, int64_t e, int) {
          for (int64_t r = b; r < e; ++r)
            for (int64_t i = 0; i < m; ++i)
              y[size_t(i * n + r)] = f == WeightFormat::kF32
                                         ? naive_dot_f32(reinterpret_cast<const float*>(data + r * rb), x.data() + i * k, k)
                                         : naive_dot_q8_0(data + r * rb, x.data() + i * k, k);
        });
      } else {
        check(gemm_stored({.format = f, .n = n, .k = k, .data = data}, x.data(), m, y.data(), pool, ws.get(), act));
      }
    };
    vs.push_back(std::move(v));
  };
  stored(WeightFormat::kF32, true);
  stored(WeightFormat::kF32, false);
  stored(WeightFormat::kF16, false);
  stored(WeightFormat::kBf16, false);
  stored(WeightFormat::kQ8_0, true);
  stored(WeightFormat::kQ8_0, false);
  stored(WeightFormat::kQ8_0, false, Q8Activations::kQ8_0);
  if (n % kQ8R16Rows == 0) stored(WeightFormat::kQ8_0R16, false);
  if (n % kQ8R16Rows == 0) stored(WeightFormat::kF16R16, false, Activations(Q8Activations::kQ8_0, F16Activations::kF16));
  stored(WeightFormat::kF16, false, Activations(Q8Activations::kF32, F16Activations::kF16));
  stored(WeightFormat::kF16, false, Q8Activations::kF32, true);
  stored(WeightFormat::kF16, false, Activations(Q8Activations::kF32, F16Activations::kF16), true);
  Variant read_peak_row;
  for (Precision p : {Precision::kF32, Precision::kBf16, Precision::kW8A8}) {
    auto one = PackedWeights::pack(w, n, k, p);
    check(one.has_value() ? ok_status() : Status(unexpected(one.error())));
    const int copies = copies_for(double(one->weight_bytes()));
    auto set = std::make_shared<std::vector<PackedWeights>>();
    set->push_back(std::move(*one));
    for (int c = 1; c < copies; ++c) set->push_back(std::move(*PackedWeights::pack(w, n, k, p)));
    auto next = std::make_shared<int>(0);
    auto ws = std::make_shared<Workspace>();
    Variant v;
    v.name = fmt::format("packed {}", precision_name(p));
    v.cost = gemm_cost(p, m, n, k);
    v.peak_flops = p == Precision::kBf16   ? roof.bf16_dot_1t.median * pool->size()
                   : p == Precision::kW8A8 ? roof.int8_dot_1t.median * pool->size()
                                           : 0;
    v.call = [=, &x, &y] {
      const PackedWeights& pw = (*set)[size_t(*next)];
      *next = (*next + 1) % copies;
      check(recur::gemm::gemm(pw, x.data(), m, y.data(), {.algo = Algo::kDot}, pool, *ws));
    };
    vs.push_back(std::move(v));
    if (p == Precision::kF32) {
      std::vector<const std::byte*> copies;
      for (const PackedWeights& pw : *set) copies.push_back(static_cast<const std::byte*>(pw.hi()));
      read_peak_row = read_peak("the packed f32 weights", std::move(copies), set->front().weight_bytes(), pool);
    }
  }
  vs.push_back(std::move(read_peak_row));
  fmt::print("\n## GEMV M={} N={} K={} ({} MiB of weights per format, rotated)\n\n", m, n, k, o.mb);
  fmt::print("| shape | variant | us/call [min .. max] | x naive f32 | GB/s | BW frac | GFLOP/s | FLOP frac |\n");
  fmt::print("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  run_table(vs, o, bw, fl, fmt::format("M{} N{} K{}", m, n, k));
}

void bench_gemm(const Opts& o, ThreadPool* pool, const Roofline& roof) {
  const int64_t m = o.m, n = o.n, k = o.k;
  const double bw = bench::read_roof_gbps(roof, pool->size());
  const double fl = bench::fma_roof_gflops(roof, pool->size());
  auto w = randn(size_t(n * k), 3);
  auto x = randn(size_t(m * k), 4);
  auto y = std::make_shared<std::vector<float>>(size_t(m * n));
  std::vector<Variant> vs;
  auto add = [&](Precision p, Algo a) {
    auto pw = std::make_shared<PackedWeights>(std::move(*PackedWeights::pack(w, n, k, p)));
    auto ws = std::make_shared<Workspace>();
    Variant v;
    v.name = fmt::format("{} {}", precision_name(p), algo_name(a));
    v.cost = gemm_cost(p, m, n, k);
    v.peak_flops = p == Precision::kBf16 || p == Precision::kBf16x3 || p == Precision::kBf16x6
                       ? roof.bf16_dot_1t.median * pool->size()
                   : p == Precision::kW8A8                         ? roof.int8_dot_1t.median * pool->size()
                                                                   : 0;
    v.call = [=, &x] { check(recur::gemm::gemm(*pw, x.data(), m, y->data(), {.algo = a}, pool, *ws)); };
    vs.push_back(std::move(v));
  };
  add(Precision::kF32, Algo::kDot);
  add(Precision::kF32, Algo::kTiled);
  add(Precision::kTf32, Algo::kTiled);
  add(Precision::kTf32x3, Algo::kDot);
  add(Precision::kBf16, Algo::kDot);
  add(Precision::kBf16x3, Algo::kDot);
  add(Precision::kBf16x6, Algo::kDot);
  add(Precision::kW8A8, Algo::kDot);
  // Weights as a model file stores them (gemm_stored: the engine's prefill GEMM for M > 8).
  auto stored = [&](WeightFormat f, Q8Activations q8) {
    auto bytes = std::make_shared<std::vector<std::byte>>(encode(f, w, n, k));
    auto ws = std::make_shared<Workspace>();
    Variant v;
    v.name = fmt::format("stored {}{}", weight_format_name(f),
                         f == WeightFormat::kQ8_0 ? fmt::format(" act {}", q8_activations_name(q8)) : "");
    v.cost = stored_cost(f, m, n, k);
    v.call = [=, &x] {
      check(gemm_stored({.format = f, .n = n, .k = k, .data = bytes->data()}, x.data(), m, y->data(), pool, ws.get(), q8));
    };
    vs.push_back(std::move(v));
  };
  for (WeightFormat f : {WeightFormat::kF32, WeightFormat::kF16, WeightFormat::kBf16})
    stored(f, Q8Activations::kF32);
  stored(WeightFormat::kQ8_0, Q8Activations::kF32);
  stored(WeightFormat::kQ8_0, Q8Activations::kQ8_0);
  if (n % kQ8R16Rows == 0) stored(WeightFormat::kQ8_0R16, Q8Activations::kQ8_0);
  if (n % kQ8R16Rows == 0) stored(WeightFormat::kF16R16, Q8Activations::kQ8_0);
  vs.push_back(fma_peak(pool, 20));
  fmt::print("\n## GEMM M={} N={} K={}\n\n", m, n, k);
  fmt::print("| shape | variant | us/call [min .. max] | x f32 dot | GB/s | BW frac | GFLOP/s | FLOP frac |\n");
  fmt::print("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
  run_table(vs, o, bw, fl, fmt::format("M{} N{} K{}", m, n, k));
}

void error_study(ThreadPool* pool) {
  const int64_t m = 4, n = 128;
  fmt::print("\n## Error vs K: |y - y64| / sum_k |x w|, x, w ~ N(0, 1), M={} N={}, 3 seeds, isa {}\n\n", m, n,
             isa_name(active_isa()));
  fmt::print("| precision |");
  const int64_t ks[] = {256, 512, 1024, 2048, 4096, 8192};
  for (int64_t k : ks) fmt::print(" K={} rms / max |", k);
  fmt::print("\n| --- |");
  for (size_t i = 0; i < std::size(ks); ++i) fmt::print(" --- |");
  fmt::print("\n");
  std::vector<std::vector<std::pair<double, double>>> table(std::size(kAllPrecisions));
  for (int64_t k : ks) {
    std::vector<double> sq(std::size(kAllPrecisions)), mx(std::size(kAllPrecisions));
    int64_t count = 0;
    for (uint64_t seed = 0; seed < 3; ++seed) {
      auto x = randn(size_t(m * k), 100 + seed * 7 + uint64_t(k));
      auto w = randn(size_t(n * k), 200 + seed * 7 + uint64_t(k));
      std::vector<double> ref(size_t(m * n)), mag(ref.size());
      reference_exact(x, w, m, n, k, ref, mag);
      for (size_t pi = 0; pi < std::size(kAllPrecisions); ++pi) {
        auto pw = PackedWeights::pack(w, n, k, kAllPrecisions[pi]);
        std::vector<float> y(ref.size());
        Workspace ws;
        check(recur::gemm::gemm(*pw, x.data(), m, y.data(), {.algo = Algo::kDot}, pool, ws));
        for (size_t i = 0; i < y.size(); ++i) {
          const double e = std::fabs(double(y[i]) - ref[i]) / mag[i];
          sq[pi] += e * e;
          mx[pi] = std::max(mx[pi], e);
        }
      }
      count += m * n;
    }
    for (size_t pi = 0; pi < std::size(kAllPrecisions); ++pi)
      table[pi].push_back({std::sqrt(sq[pi] / double(count)), mx[pi]});
  }
  for (size_t pi = 0; pi < std::size(kAllPrecisions); ++pi) {
    fmt::print("| {} |", precision_name(kAllPrecisions[pi]));
    for (auto [r, x] : table[pi]) fmt::print(" {:.2e} / {:.2e} |", r, x);
    fmt::print("\n");
  }
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Opts o = parse(argc, argv);
  auto roof = machine_roofline();
  if (!roof) {
    std::fprintf(stderr, "bench_gemm: roofline: %s\n", roof.error().to_string().c_str());
    return 1;
  }
  auto pool_r = ThreadPool::create({.threads = o.threads, .pin = true});
  if (!pool_r) {
    std::fprintf(stderr, "bench_gemm: %s\n", pool_r.error().to_string().c_str());
    return 1;
  }
  ThreadPool* pool = pool_r->get();
  g_cpu_time = o.cpu_time;
  g_threads = pool->size();
  fmt::print("# bench_gemm: isa {}, {} threads, {} runs, {} time; roofline: read {:.1f} GB/s, fp32 FMA {:.1f} GFLOP/s "
             "({} threads), bf16 dot {:.0f}, int8 dot {:.0f} per thread\n",
             isa_name(active_isa()), pool->size(), o.runs, o.cpu_time ? "cpu" : "wall",
             bench::read_roof_gbps(*roof, pool->size()),
             bench::fma_roof_gflops(*roof, pool->size()), pool->size(),
             roof->bf16_dot_1t.median, roof->int8_dot_1t.median);
  if (o.mode == "gemv" || o.mode == "all") bench_gemv(o, pool, *roof);
  if (o.mode == "gemm" || o.mode == "all") bench_gemm(o, pool, *roof);
  if (o.mode == "errors" || o.mode == "all") error_study(pool);
  return 0;
}
