// The rest of a layer (issue #5): every registered layer kernel's variants against its scalar
// baseline, through the bench probe (probe::bench_kernel), at decode- and prefill-sized shapes.
//
//   build/benchmarks/bench_layer_kernels [--budget-s S] [--rotate R] [--only NAME,...] [--cached-peaks]
//
// Each comparison is bench's interleaved ABBA rounds with in-run A/A calibration (>= 12 rounds,
// each sample the fastest of 3 timings of >= 1 ms; docs/probes.md): the table gives both
// medians with their bootstrap 95% CIs, the ratio with its CI, bench's verdict, and the
// candidate's GB/s and GFLOP/s from the kernel's cost model as fractions of the one-thread
// peaks (the kernels run on the calling thread). Kernels with a single variant (no scalar
// baseline: route_topk, the f32/f16/bf16 embeddings, sample) are timed alone.
// The peaks are measured at start in this process (about 2 s), so the fractions divide by what
// the machine gives right now, not by a cache written under another load; --cached-peaks uses
// ~/.cache/recur/sysinfo.json instead.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "bench_args.h"
#include "core/cpu_features.h"
#include "core/thread_pool.h"
#include "kernels/registry.h"
#include "probe/bench_kernel.h"
#include "probe/roofline_measure.h"
#include "probe/sysinfo.h"

namespace {

using namespace recur;

struct Options {
  double budget_s = 1.5;
  int rotate = 4;
  bool cached_peaks = false;
  std::vector<std::string> only;
};

struct Case {
  const char* kernel;
  const char* shape;
  int rotate = 0;       // 0: --rotate; large tables use fewer sets
  double budget_x = 1;  // slow baselines (ms per call) need more time for bench's 12 rounds
};

// Decode (one token) and prefill (64 tokens) sizes of a 4096-wide, 32-head model.
const Case kCases[] = {
    {"rmsnorm", "M1,N4096"},
    {"rmsnorm", "M64,N4096"},
    {"rmsnorm_residual", "M1,N4096"},
    {"rmsnorm_residual", "M64,N4096"},
    {"swiglu", "M1,N11008"},
    {"swiglu", "M64,N11008", 0, 3},
    {"softmax", "M32,N4096"},
    {"softmax", "M1,N32000"},
    {"rope", "T1,H32,D128,P4000,NEOX0"},
    {"rope", "T64,H32,D128,P0,NEOX1"},
    {"route_topk", "T64,E64,K8,SIG0,NORM1"},
    {"route_topk", "T64,E256,K8,SIG1,NORM1"},
    {"grouped_gemm", "E8,T64,N512,K1024", 0, 5},
    {"embedding_f32", "T64,V4096,N4096", 2},
    {"embedding_f16", "T64,V4096,N4096", 2},
    {"embedding_bf16", "T64,V4096,N4096", 2},
    {"embedding_q8_0", "T64,V4096,N4096", 2},
    {"sample", "R1,V32000,TEMP0,TOPP1000,SEED1"},
    {"sample", "R1,V32000,TEMP800,TOPP950,SEED1"},
    {"gemv", "M4096,N4096", 2, 6},
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&] { return bench::flag_value(argc, argv, i, "bench_layer_kernels"); };
    if (a == "--budget-s") o.budget_s = std::atof(next());
    else if (a == "--rotate") o.rotate = std::max(1, std::atoi(next()));
    else if (a == "--only") o.only = bench::split_list(next());
    else if (a == "--cached-peaks") o.cached_peaks = true;
    else {
      std::fprintf(stderr,
                   "usage: bench_layer_kernels [--budget-s S] [--rotate R] [--only NAME,...] [--cached-peaks]\n");
      std::exit(2);
    }
  }
  return o;
}

Result<probe::MachinePeaks> peaks(const Options& o) {
  if (o.cached_peaks) return probe::machine_peaks();
  RECUR_ASSIGN_OR_RETURN(auto pool, ThreadPool::create({.threads = 1, .pin = true}));
  const auto caches = describe_machine().caches;
  return probe::peaks_from(measure_roofline(*pool, caches), caches);
}

double metric(const Feedback& f, const char* name) {
  const Metric* m = f.find_metric(name);
  return m ? m->value : 0;
}

// "12.3 [12.1, 12.6]"
std::string with_ci(const Feedback& f, const char* name, int digits) {
  const Metric* m = f.find_metric(name);
  if (!m) return "—";
  if (!m->ci95) return fmt::format("{:.{}f}", m->value, digits);
  return fmt::format("{:.{}f} [{:.{}f}, {:.{}f}]", m->value, digits, m->ci95->first, digits, m->ci95->second, digits);
}

// The per-call working set from bench's note "working set 1.0 MiB per call, x4 rotated: ...".
std::string working_set(const Feedback& f) {
  for (const std::string& n : f.notes)
    if (n.rfind("working set ", 0) == 0) return n.substr(12, n.find(" per call") - 12);
  return "—";
}

std::string verdict_of(const Feedback& f, bool compared) {
  if (!compared) return "alone";
  for (const std::string& n : f.notes)
    for (const char* v : {"faster", "slower", "same", "inconclusive"})
      if (n.rfind(fmt::format("bench verdict: {}", v), 0) == 0) return v;
  return std::string(verdict_name(f.verdict));
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  auto pk = peaks(o);
  if (!pk) {
    std::fprintf(stderr, "bench_layer_kernels: peaks: %s\n", pk.error().to_string().c_str());
    return 1;
  }
  fmt::print("# bench_layer_kernels: isa {}, 1 thread, budget {:.1f} s per comparison; peaks ({}): read {:.1f} GB/s, "
             "fp32 FMA {:.1f} GFLOP/s, in-cache bound {:.0f} GB/s\n\n",
             isa_name(active_isa()), o.budget_s, o.cached_peaks ? "cached" : "measured now", pk->dram_gbps, pk->gflops,
             pk->cache_gbps);
  fmt::print("| kernel | shape | variant | baseline | base us [95% CI] | us [95% CI] | ratio [95% CI] | verdict | rounds | "
             "working set | GB/s | BW frac | GFLOP/s | FLOP frac |\n");
  fmt::print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |\n");
  const kernels::KernelRegistry& reg = kernels::KernelRegistry::global();
  for (const Case& c : kCases) {
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), c.kernel) == o.only.end()) continue;
    const kernels::KernelSpec* spec = reg.find(c.kernel);
    if (!spec) {
      std::fprintf(stderr, "bench_layer_kernels: no kernel %s\n", c.kernel);
      return 1;
    }
    auto shape = spec->parse_shape(c.shape);
    if (!shape) {
      std::fprintf(stderr, "bench_layer_kernels: %s\n", shape.error().to_string().c_str());
      return 1;
    }
    probe::KernelBenchOptions bo;
    bo.bench.budget_s = o.budget_s * c.budget_x;
    bo.rotate = c.rotate ? std::min(c.rotate, o.rotate) : o.rotate;
    bo.peaks = *pk;
    const kernels::VariantSpec* base = spec->variants.size() > 1 ? &spec->variants.front() : nullptr;
    for (const kernels::VariantSpec& v : spec->variants) {
      if (&v == base || !kernels::check_runnable(v)) continue;
      auto f = probe::bench_kernel(*spec, v, base, *shape, bo);
      if (!f) {
        std::fprintf(stderr, "bench_layer_kernels: %s %s: %s\n", c.kernel, v.name.c_str(), f.error().to_string().c_str());
        return 1;
      }
      fmt::print("| {} | {} | {} | {} | {} | {} | {} | {} | {:.0f} | {} | {:.1f} | {:.2f} | {:.2f} | {:.3f} |\n", c.kernel,
                 c.shape, v.name, base ? base->name : "—", base ? with_ci(*f, "baseline_time_us", 2) : "—",
                 with_ci(*f, "time_us", 2), base ? with_ci(*f, "ratio", 3) : "—", verdict_of(*f, base != nullptr),
                 metric(*f, "rounds"), working_set(*f), metric(*f, "gbps"), metric(*f, "bandwidth_frac"), metric(*f, "gflops"),
                 metric(*f, "compute_frac"));
      std::fflush(stdout);
    }
  }
  return 0;
}
