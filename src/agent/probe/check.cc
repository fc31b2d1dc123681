#include "probe/check.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <limits>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/clock.h"
#include "probe/check_compare.h"
#include "probe/check_numeric.h"
#include "probe/kernel_harness.h"

namespace recur::probe {

using kernels::KernelSpec;
using kernels::Shape;
using kernels::Tolerance;
using kernels::VariantSpec;

kernels::Tolerance default_tolerance(DType t) {
  switch (t) {
    case DType::kF64: return {.atol = 1e-300, .rtol = 1e-12};
    case DType::kF32: return {.atol = 1e-30, .rtol = 1e-5};
    case DType::kBF16: return {.atol = 1e-30, .rtol = 1.6e-2};
    case DType::kF16: return {.atol = 6.1e-5, .rtol = 2e-3};
    case DType::kFP8E4M3: return {.atol = 0.02, .rtol = 0.125};
    case DType::kFP8E5M2: return {.atol = 0.02, .rtol = 0.25};
    case DType::kI32: case DType::kI8: case DType::kU8: return {.atol = 0, .rtol = 0};
  }
  return {};
}

// The variant's own bound first, then the kernel's, then check's default for the dtype.
kernels::Tolerance tolerance_for(const KernelSpec& spec, const VariantSpec& variant, DType t) {
  if (auto it = variant.tolerances.find(t); it != variant.tolerances.end()) return it->second;
  auto it = spec.tolerances.find(t);
  return it != spec.tolerances.end() ? it->second : default_tolerance(t);
}

std::string describe_location(const kernels::TensorSpec& t, const ElementLocation& loc) {
  std::vector<std::string> idx;
  for (size_t d = 0; d < loc.index.size(); ++d)
    idx.push_back(fmt::format("{} {}", d < t.coords.size() ? t.coords[d] : fmt::format("d{}", d), loc.index[d]));
  std::string s = fmt::format("{}[{}] tile ({})", t.name, fmt::join(idx, ", "), fmt::join(loc.tile, ", "));
  if (loc.shards > 1) s += fmt::format(" shard {}/{}", loc.shard, loc.shards);
  return s;
}

namespace {

struct InputSnapshot {
  std::vector<std::vector<unsigned char>> bytes;
  std::vector<uint64_t> sums;
};

InputSnapshot snapshot(const KernelInstance& k) {
  InputSnapshot s;
  for (const TensorView& v : k.inputs()) {
    const auto* p = static_cast<const unsigned char*>(v.data());
    s.bytes.emplace_back(p, p + v.span_bytes());
    s.sums.push_back(checksum_bytes(v.data(), v.span_bytes()));
  }
  return s;
}

// A description of the first input the variant modified, or "" when none.
std::string find_mutation(const KernelInstance& k, const InputSnapshot& before) {
  for (size_t i = 0; i < k.inputs().size(); ++i) {
    const TensorView& v = k.inputs()[i];
    uint64_t after = checksum_bytes(v.data(), v.span_bytes());
    if (after == before.sums[i]) continue;
    const size_t w = dtype_size(v.dtype());
    const auto* now = static_cast<const unsigned char*>(v.data());
    int64_t first = 0;
    for (size_t b = 0; b < before.bytes[i].size(); ++b)
      if (now[b] != before.bytes[i][b]) {
        first = int64_t(b / w);
        break;
      }
    ElementLocation loc;
    loc.index = unflatten(first, v.shape());
    const kernels::TensorSpec& spec = k.spec().inputs[i];
    std::vector<std::string> idx;
    for (size_t d = 0; d < loc.index.size(); ++d) idx.push_back(fmt::format("{} {}", spec.coords[d], loc.index[d]));
    return fmt::format("input {} was modified by the variant (checksum {:016x} -> {:016x}); first change at {}[{}]: {} -> {}",
                       spec.name, before.sums[i], after, spec.name, fmt::join(idx, ", "),
                       load_as_double(v.dtype(), before.bytes[i].data(), size_t(first)),
                       load_as_double(v.dtype(), v.data(), size_t(first)));
  }
  return "";
}

void restore(KernelInstance& k, const InputSnapshot& s) {
  for (size_t i = 0; i < k.inputs().size(); ++i) std::memcpy(k.inputs()[i].data(), s.bytes[i].data(), s.bytes[i].size());
}

// Whether every written element is within tolerance of `want` (used to recognise stale output).
bool matches(const KernelInstance& k, size_t output, std::span<const double> want, std::span<const double> mag,
             const Tolerance& tol) {
  const TensorView& v = k.outputs()[output];
  int64_t compared = 0;
  for (int64_t i = 0; i < v.numel(); ++i) {
    if (is_sentinel(v.dtype(), v.data(), size_t(i))) continue;
    double g = load_as_double(v.dtype(), v.data(), size_t(i));
    if (!(std::fabs(g - want[size_t(i)]) <= tol.atol + tol.rtol * mag[size_t(i)])) return false;
    ++compared;
  }
  return compared > 0;
}

struct Expected {
  std::vector<std::vector<double>> values, magnitudes;
};

Expected run_reference(const KernelSpec& spec, const Shape& shape, const KernelInstance& k,
                       const std::vector<std::vector<double>>& inputs) {
  Expected e;
  for (const TensorView& v : k.outputs()) {
    e.values.emplace_back(size_t(v.numel()), 0.0);
    e.magnitudes.emplace_back(size_t(v.numel()), 0.0);
  }
  spec.reference(shape, inputs, e.values, e.magnitudes);
  return e;
}

// Seconds per call: the fastest of 5 batches of at least ~2 ms (the speed-of-light comparison
// wants the best the variant can do, so the minimum, not the median).
double time_per_call(KernelInstance& k, const VariantSpec& v) {
  (void)k.run(v);
  int64_t iters = 1;
  for (;;) {
    int64_t t0 = now_ns();
    for (int64_t i = 0; i < iters; ++i) (void)k.run(v);
    int64_t dt = now_ns() - t0;
    if (dt >= 2'000'000 || iters >= (int64_t(1) << 24)) break;
    iters *= dt < 200'000 ? 8 : 2;
  }
  double best = std::numeric_limits<double>::infinity();
  for (int r = 0; r < 5; ++r) {
    int64_t t0 = now_ns();
    for (int64_t i = 0; i < iters; ++i) (void)k.run(v);
    best = std::min(best, double(now_ns() - t0) * 1e-9 / double(iters));
  }
  return best;
}

const VariantSpec& ghost_variant() {
  static const VariantSpec ghost{.name = "ghost-noop", .isa = Isa::kScalar, .help = "writes nothing",
                                 .run = [](const kernels::KernelCall&) {}};
  return ghost;
}

}  // namespace

Result<CheckReport> check_variant(const KernelSpec& spec, const VariantSpec& variant, const Shape& shape,
                                  const CheckOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  RECUR_RETURN_IF_ERROR(kernels::check_runnable(variant));
  if (options.vs) RECUR_RETURN_IF_ERROR(kernels::check_runnable(*options.vs));
  if (options.seeds.empty() || options.distributions.empty())
    return invalid_argument("check: need at least one seed and one distribution");
  std::vector<int> partitions;
  for (int p : options.partitions)
    if (p != 1) partitions.push_back(p);
  if (!partitions.empty() && !spec.partitioning)
    return invalid_argument("kernel {} has no partitioning; drop --partitions", spec.name);
  for (int p : partitions) {
    if (p < 1) return invalid_argument("check: partition count {} must be >= 1", p);
    if (shape[spec.partitioning->param] < p)
      return invalid_argument("kernel {}: cannot split {}={} into {} shards", spec.name, spec.partitioning->param,
                              shape[spec.partitioning->param], p);
  }
  RECUR_ASSIGN_OR_RETURN(KernelInstance k, KernelInstance::make(spec, shape));

  CheckReport report;
  report.kernel = spec.name;
  report.variant = variant.name;
  report.shape = shape;
  std::vector<Tolerance> tol;
  for (const kernels::TensorSpec& t : spec.outputs) {
    tol.push_back(options.tolerance ? *options.tolerance : tolerance_for(spec, variant, t.dtype));
    report.tolerances.push_back(fmt::format("{} {}: |err| <= {:.3g} + {:.3g} * magnitude", t.name, dtype_name(t.dtype),
                                            tol.back().atol, tol.back().rtol));
  }
  auto prepare_outputs = [&] {
    if (options.sentinels) k.fill_outputs_sentinel();
    else k.fill_outputs_zero();
  };
  auto compare = [&](size_t o, std::span<const double> want, std::span<const double> mag, Tolerance t, int shards) {
    return compare_output(CompareInput{.spec = &spec.outputs[o], .got = &k.outputs()[o], .want = want, .magnitude = mag,
                                       .tolerance = t, .sentinels = options.sentinels, .shards = shards,
                                       .tiles_reported = options.tiles_reported});
  };

  // Ghost replay: a no-op through the same harness must fail, or the check cannot see the kernel.
  if (options.ghost_replay) {
    auto inputs = k.fill_inputs(options.distributions[0], options.seeds[0]);
    Expected e = run_reference(spec, shape, k, inputs);
    prepare_outputs();
    RECUR_RETURN_IF_ERROR(k.run(ghost_variant()));
    bool all_pass = true;
    int64_t bad = 0, total = 0;
    for (size_t o = 0; o < spec.outputs.size(); ++o) {
      Comparison c = compare(o, e.values[o], e.magnitudes[o], tol[o], 1);
      all_pass &= c.pass;
      bad += c.stats.out_of_tolerance;
      total += c.stats.count;
    }
    report.ghost_rejected = !all_pass;
    report.ghost_evidence =
        all_pass ? "ghost replay: a no-op variant PASSES this check, so it cannot tell whether the variant ran "
                   "(outputs do not depend on inputs, or the defences are off)"
                 : fmt::format("ghost replay: a no-op variant was rejected ({} of {} elements wrong): the check observes the kernel",
                               bad, total);
    if (all_pass) report.problems.push_back(report.ghost_evidence);
  }

  std::vector<std::vector<double>> inputs;
  Expected previous;
  bool have_previous = false, first = true;
  for (uint64_t seed : options.seeds) {
    for (Distribution dist : options.distributions) {
      if (options.fresh_inputs || first) inputs = k.fill_inputs(dist, seed);
      first = false;
      Expected e = run_reference(spec, shape, k, inputs);
      std::vector<std::vector<double>> whole;  // the unpartitioned outputs
      std::vector<int> runs = {1};
      runs.insert(runs.end(), partitions.begin(), partitions.end());
      for (int shards : runs) {
        prepare_outputs();
        InputSnapshot before;
        if (options.checksum_inputs) before = snapshot(k);
        RECUR_RETURN_IF_ERROR(k.run(variant, shards));
        if (options.checksum_inputs) {
          std::string mutation = find_mutation(k, before);
          if (!mutation.empty()) {
            report.problems.push_back(fmt::format("{} (seed {}, {}, P={})", mutation, seed, distribution_name(dist), shards));
            restore(k, before);
          }
        }
        for (size_t o = 0; o < spec.outputs.size(); ++o) {
          Comparison c = compare(o, e.values[o], e.magnitudes[o], tol[o], shards);
          c.against = "reference";
          c.seed = seed;
          c.distribution = dist;
          c.output = o;
          if (!c.pass && have_previous && matches(k, o, previous.values[o], previous.magnitudes[o], tol[o])) c.stale = true;
          if (shards == 1) {
            whole.push_back(k.output_values(o));
          } else {
            Comparison u = compare(o, whole[o], e.magnitudes[o], tol[o], shards);
            u.against = "unpartitioned";
            u.seed = seed;
            u.distribution = dist;
            u.output = o;
            report.comparisons.push_back(std::move(c));
            report.comparisons.push_back(std::move(u));
            continue;
          }
          report.comparisons.push_back(std::move(c));
        }
      }
      if (options.vs) {
        prepare_outputs();
        RECUR_RETURN_IF_ERROR(k.run(*options.vs));
        std::vector<std::vector<double>> theirs;
        for (size_t o = 0; o < spec.outputs.size(); ++o) theirs.push_back(k.output_values(o));
        prepare_outputs();
        RECUR_RETURN_IF_ERROR(k.run(variant));
        for (size_t o = 0; o < spec.outputs.size(); ++o) {
          // Both sides are approximations within tol of the reference: allow twice the tolerance.
          Tolerance t2{.atol = 2 * tol[o].atol, .rtol = 2 * tol[o].rtol};
          Comparison c = compare(o, theirs[o], e.magnitudes[o], t2, 1);
          c.against = "variant " + options.vs->name;
          c.seed = seed;
          c.distribution = dist;
          c.output = o;
          report.comparisons.push_back(std::move(c));
        }
      }
      previous = std::move(e);
      have_previous = true;
    }
  }

  for (Comparison& c : report.comparisons)
    if (c.stats.worst.flat >= 0) c.where = describe_location(spec.outputs[c.output], c.stats.worst);
  for (const Comparison& c : report.comparisons) {
    const kernels::TensorSpec& t = spec.outputs[c.output];
    if (c.stats.unwritten > 0) {
      report.problems.push_back(fmt::format("partial write: {} of {} elements of {} still hold the sentinel (first at {}; seed {}, {}, P={})",
                                            c.stats.unwritten, c.stats.count, t.name, describe_location(t, c.stats.first_unwritten),
                                            c.seed, distribution_name(c.distribution), c.shards));
      break;
    }
  }
  for (const Comparison& c : report.comparisons)
    if (c.stale) {
      report.problems.push_back(fmt::format("stale output: {} matches the previous trial's expected values, not this trial's "
                                            "(seed {}, {}): the variant returns cached results",
                                            spec.outputs[c.output].name, c.seed, distribution_name(c.distribution)));
      break;
    }

  if (options.roofline_flag) {
    MachinePeaks peaks;
    if (options.peaks) {
      peaks = *options.peaks;
    } else {
      RECUR_ASSIGN_OR_RETURN(peaks, machine_peaks());
    }
    report.time_per_call_s = time_per_call(k, variant);
    RooflineReport r = analyze_roofline(spec.cost.bytes(shape), spec.cost.flops(shape), report.time_per_call_s, k.bytes(), peaks);
    if (r.beyond_roofline)
      report.problems.push_back(fmt::format("impossibly fast: {:.3g} us per call is {:.1f}x faster than the roofline allows "
                                            "({:.3g} us for {:.3g} bytes, {:.3g} FLOPs): the variant skips work",
                                            report.time_per_call_s * 1e6, r.beyond_factor, r.bound_s * 1e6,
                                            spec.cost.bytes(shape), spec.cost.flops(shape)));
    report.roofline = r;
  }

  report.pass = report.problems.empty() && std::all_of(report.comparisons.begin(), report.comparisons.end(),
                                                       [](const Comparison& c) { return c.pass; });
  report.cost_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

Feedback check_feedback(const CheckReport& r, const CheckOptions& options) {
  Feedback f;
  f.probe = "check.kernel";
  f.tier = 1;
  f.cost_s = r.cost_s;
  f.subject = fmt::format("kernel:{} variant={}{} shape={}", r.kernel, r.variant,
                          options.vs ? " vs " + options.vs->name : "", r.shape.to_string());
  f.hypothesis = fmt::format("{} matches the float64 reference{}{} within tolerance", r.variant,
                             options.vs ? " and variant " + options.vs->name : "",
                             options.partitions.empty() ? "" : fmt::format(" and is unchanged by partitioning P={}",
                                                                           fmt::join(options.partitions, ",")));
  f.verdict = !r.ghost_rejected ? Verdict::kFailed : r.pass ? Verdict::kConfirmed : Verdict::kRefuted;

  double max_abs = 0, max_rel = 0, nmse = 0, frac = 0;
  int64_t max_ulp = 0, failed = 0;
  const Comparison* worst = nullptr;
  for (const Comparison& c : r.comparisons) {
    if (c.against != "reference") continue;
    max_abs = std::max(max_abs, c.stats.max_abs);
    max_rel = std::max(max_rel, c.stats.max_rel);
    nmse = std::max(nmse, c.stats.nmse);
    max_ulp = std::max(max_ulp, c.stats.max_ulp);
    frac = std::max(frac, c.stats.frac_out_of_tolerance());
    if (worst == nullptr || c.stats.worst_ratio > worst->stats.worst_ratio) worst = &c;
  }
  for (const Comparison& c : r.comparisons) failed += !c.pass;
  f.add_metric("max_abs", max_abs);
  f.add_metric("max_rel", max_rel);
  f.add_metric("nmse", nmse);
  f.add_metric("max_ulp", double(std::min<int64_t>(max_ulp, int64_t(1) << 53)), "ulp");
  f.add_metric("frac_out_of_tolerance", frac);
  f.add_metric("comparisons", double(r.comparisons.size()));
  f.add_metric("comparisons_failed", double(failed));
  if (r.roofline) {
    f.add_metric("time_us", r.time_per_call_s * 1e6, "us");
    f.add_metric("speed_of_light_frac", r.roofline->beyond_factor);
  }

  for (const std::string& p : r.problems) f.notes.push_back(p);
  int shown = 0;
  for (const Comparison& c : r.comparisons) {
    if (c.pass || shown >= 3) continue;
    ++shown;
    f.notes.push_back(fmt::format("FAIL vs {} (seed {}, {}, P={}): {} of {} out of tolerance; worst {}: got {:.9g} want {:.9g}",
                                  c.against, c.seed, distribution_name(c.distribution), c.shards, c.stats.out_of_tolerance,
                                  c.stats.count, c.where, c.stats.worst_got, c.stats.worst_want));
    if (c.shard_table.size() > 1) {
      std::vector<std::string> rows;
      for (const ShardRow& s : c.shard_table)
        rows.push_back(fmt::format("#{} [{},{}) max_abs {:.3g} bad {}", s.shard, s.begin, s.end, s.max_abs, s.out_of_tolerance));
      f.notes.push_back(fmt::format("  shards: {}", fmt::join(rows, " | ")));
    }
    if (!c.worst_tiles.empty()) {
      std::vector<std::string> rows;
      for (const TileRow& t : c.worst_tiles)
        rows.push_back(fmt::format("({}){} max_abs {:.3g} bad {}", fmt::join(t.tile, ","),
                                   c.shards > 1 ? fmt::format("@shard{}", t.shard) : "", t.max_abs, t.out_of_tolerance));
      f.notes.push_back(fmt::format("  worst tiles: {}", fmt::join(rows, " | ")));
    }
  }
  if (r.pass) {
    bool identical = true;
    for (const Comparison& c : r.comparisons)
      if (c.against == "unpartitioned") identical &= c.stats.max_ulp == 0 && c.stats.out_of_tolerance == 0;
    f.notes.push_back(fmt::format("all {} comparisons within tolerance ({} seeds x {} distributions){}", r.comparisons.size(),
                                  options.seeds.size(), options.distributions.size(),
                                  options.partitions.empty() ? "" : identical ? "; partitions bit-identical to unpartitioned"
                                                                              : "; partitions within tolerance of unpartitioned"));
    if (worst != nullptr && worst->stats.worst.flat >= 0)
      f.notes.push_back(fmt::format("largest error at {} ({}, seed {}): {:.3g} of the allowed", worst->where,
                                    distribution_name(worst->distribution), worst->seed, worst->stats.worst_ratio));
  }
  for (const std::string& t : r.tolerances) f.notes.push_back("tolerance " + t);
  if (!r.ghost_evidence.empty() && r.ghost_rejected) f.notes.push_back(r.ghost_evidence);
  if (r.roofline) f.notes.push_back(roofline_summary(*r.roofline));
  if (f.verdict == Verdict::kRefuted) f.next.push_back(fmt::format("recur check {} --variant {} --seeds 1 --json", r.kernel, r.variant));
  return f;
}

}  // namespace recur::probe
