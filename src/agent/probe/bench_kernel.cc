#include "probe/bench_kernel.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/aligned_buffer.h"
#include "core/cpu_features.h"
#include "probe/kernel_harness.h"
#include "probe/perf_counters.h"

namespace recur::probe {

using kernels::KernelCall;

namespace {

std::string hypothesis_text(std::string_view candidate, std::string_view baseline, BenchVerdict h) {
  switch (h) {
    case BenchVerdict::kFaster: return fmt::format("{} is faster than {}", candidate, baseline);
    case BenchVerdict::kSlower: return fmt::format("{} is slower than {}", candidate, baseline);
    default: return fmt::format("{} takes the same time as {}", candidate, baseline);
  }
}

// `rotate` input sets of one kernel and shape.
Result<std::vector<KernelInstance>> input_sets(const kernels::KernelSpec& spec, const kernels::Shape& shape,
                                               int rotate) {
  std::vector<KernelInstance> sets;
  for (int i = 0; i < rotate; ++i) {
    RECUR_ASSIGN_OR_RETURN(KernelInstance k, KernelInstance::make(spec, shape));
    k.fill_inputs(Distribution::kUniform, uint64_t(1000 + i));
    k.fill_outputs_zero();
    sets.push_back(std::move(k));
  }
  return sets;
}

// Runs `iters` calls of a variant, cycling through its input sets.
struct Rotation {
  std::vector<KernelInstance>* sets;
  size_t next = 0;
  void run(const kernels::VariantSpec& v, const kernels::Shape& shape, int64_t iters) {
    for (int64_t i = 0; i < iters; ++i) {
      KernelInstance& k = (*sets)[next];
      next = next + 1 == sets->size() ? 0 : next + 1;
      v.run(KernelCall{shape, k.inputs(), k.outputs(), 0, 1});
    }
  }
};

}  // namespace

Result<Feedback> bench_kernel(const kernels::KernelSpec& spec, const kernels::VariantSpec& variant,
                              const kernels::VariantSpec* baseline, const kernels::Shape& shape,
                              const KernelBenchOptions& options) {
  const KernelBenchTarget base{&spec, baseline, shape};
  return bench_kernel_targets({&spec, &variant, shape}, baseline ? &base : nullptr, options);
}

Result<Feedback> bench_kernel_targets(const KernelBenchTarget& candidate, const KernelBenchTarget* baseline,
                                      const KernelBenchOptions& options) {
  const kernels::KernelSpec& spec = *candidate.spec;
  const kernels::VariantSpec& variant = *candidate.variant;
  const kernels::Shape& shape = candidate.shape;
  RECUR_RETURN_IF_ERROR(kernels::check_runnable(variant));
  if (baseline) RECUR_RETURN_IF_ERROR(kernels::check_runnable(*baseline->variant));
  if (options.rotate < 1) return invalid_argument("bench: --rotate must be >= 1, got {}", options.rotate);
  RECUR_ASSIGN_OR_RETURN(std::vector<KernelInstance> sets, input_sets(spec, shape, options.rotate));
  // Another kernel or shape needs its own inputs; the same one shares them (as it always has).
  const bool cross = baseline && (baseline->spec != candidate.spec || !(baseline->shape == shape));
  std::vector<KernelInstance> base_sets;
  if (cross) {
    RECUR_ASSIGN_OR_RETURN(base_sets, input_sets(*baseline->spec, baseline->shape, options.rotate));
  }
  std::optional<MachinePeaks> peaks = options.peaks;
  std::string peaks_note;
  if (!peaks) {
    if (auto p = machine_peaks()) peaks = *p;
    else peaks_note = "no roofline: " + p.error().message();
  }

  Rotation cand_rot{&sets}, base_rot{&base_sets};  // base_rot only when cross: else one shared rotation
  auto arm = [](std::string name, Rotation& rot, const kernels::VariantSpec& v, const kernels::Shape& at) {
    return BenchArm{std::move(name), [&rot, &v, &at](int64_t iters) { rot.run(v, at, iters); }};
  };
  // Names in the record: the variant, or kernel/variant when the kernels differ.
  auto name_of = [&](const KernelBenchTarget& t) {
    return cross && baseline->spec != candidate.spec ? fmt::format("{}/{}", t.spec->name, t.variant->name)
                                                      : t.variant->name;
  };
  BenchOptions bo = options.bench;
  AlignedBuffer flush;
  if (options.flush_cache) {
    uint64_t llc = peaks ? peaks->llc_bytes : 0;
    size_t bytes = size_t(std::clamp<uint64_t>(2 * llc, uint64_t(32) << 20, uint64_t(256) << 20));
    flush = AlignedBuffer(bytes);
    bo.between_samples = [&flush] {
      static unsigned char v = 0;
      std::memset(flush.data(), ++v, flush.size());
    };
  }
  BenchArm cand = arm(name_of(candidate), cand_rot, variant, shape);
  BenchResult r;
  if (baseline) {
    BenchArm base = arm(name_of(*baseline), cross ? base_rot : cand_rot, *baseline->variant, baseline->shape);
    r = bench_compare(base, cand, bo);
  } else {
    bo.aa_rounds = false;
    r = bench_single(cand, bo);
  }

  Feedback f;
  f.probe = "bench.kernel";
  f.tier = 2;
  f.cost_s = r.elapsed_s;
  if (cross) {
    f.subject = fmt::format("kernel:{} variant={} shape={} vs kernel:{} variant={} shape={}", spec.name, variant.name,
                            shape.to_string(), baseline->spec->name, baseline->variant->name,
                            baseline->shape.to_string());
  } else {
    f.subject = fmt::format("kernel:{} variant={}{} shape={}", spec.name, variant.name,
                            baseline ? " vs " + baseline->variant->name : "", shape.to_string());
  }
  if (baseline) {
    f.hypothesis = hypothesis_text(name_of(candidate), name_of(*baseline), options.hypothesis);
    f.verdict = verdict_for_hypothesis(r.decision.verdict, options.hypothesis);
  } else {
    f.hypothesis = fmt::format("the time of {} is resolved to +-{:.1f}%", variant.name, 100 * bo.resolution);
    f.verdict = r.decision.verdict == BenchVerdict::kSame ? Verdict::kConfirmed : Verdict::kInconclusive;
  }
  add_bench_metrics(r, baseline != nullptr, f);
  const double seconds = r.candidate_median_ns * 1e-9;
  const double bytes = spec.cost.bytes(shape), flops = spec.cost.flops(shape);
  const uint64_t ws = sets[0].bytes();
  if (peaks && seconds > 0) {
    RooflineReport rr = analyze_roofline(bytes, flops, seconds, ws * uint64_t(options.rotate), *peaks);
    f.add_metric("gbps", rr.gbps, "GB/s");
    f.add_metric("gflops", rr.gflops, "GFLOP/s");
    f.add_metric("bandwidth_frac", rr.bandwidth_frac);
    f.add_metric("compute_frac", rr.compute_frac);
    f.notes.push_back(roofline_summary(rr));
    if (rr.beyond_roofline) {
      f.verdict = Verdict::kFailed;
      f.next.push_back(fmt::format("recur check {} --variant {} --shape {}", spec.name, variant.name, shape.to_string()));
    }
    f.notes.push_back(fmt::format("working set {} per call, x{} rotated: {}", human_bytes(ws), options.rotate,
                                  working_set_summary(ws * uint64_t(options.rotate), peaks->caches)));
  } else if (!peaks_note.empty()) {
    f.notes.push_back(peaks_note);
  }
  const int64_t counted = std::max<int64_t>(r.iters_per_sample, 1);
  CounterReading hw = count_hardware([&] { cand.run(counted); });
  if (hw.available) {
    f.add_metric("instructions_per_call", double(hw.instructions) / double(counted), "instructions");
    if (hw.cycles > 0) {
      f.add_metric("cycles_per_call", double(hw.cycles) / double(counted), "cycles");
      f.add_metric("ipc", double(hw.instructions) / double(hw.cycles));
    }
  } else {
    f.notes.push_back("hardware counters unavailable (" + hw.why + "); `--callgrind` counts instructions instead");
  }
  // The conditions, stated: a registered kernel runs on the calling thread alone (no pool, so no
  // wake-ups), which the engine's multi-threaded call of the same kernel does not share.
  f.notes.push_back(fmt::format("probe conditions: 1 thread (the kernel called directly, no pool), isa {}; {} variant "
                                "needs {}; cache flush {}",
                                isa_name(active_isa()), variant.name, isa_name(variant.isa),
                                options.flush_cache ? "before every sample" : "off"));
  if (baseline && !cross && r.decision.verdict == BenchVerdict::kInconclusive)
    f.next.push_back(fmt::format("recur bench {} --variant {} --vs {} --shape {} --budget-s {:.0f}", spec.name, variant.name,
                                 baseline->variant->name, shape.to_string(), 2 * bo.budget_s));
  return f;
}

}  // namespace recur::probe
