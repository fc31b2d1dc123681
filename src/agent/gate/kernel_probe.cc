#include "gate/kernel_probe.h"

#include <algorithm>

#include <fmt/format.h>

#include "kernels/registry.h"
#include "probe/bench_kernel.h"
#include "probe/check.h"
#include "probe/probe_cli.h"

namespace recur::gate {

namespace {

// The kernel, the arm's variant and the shape.
Result<probe::KernelTarget> target_for(const KernelWorkload& w, const Config& arm) {
  RECUR_ASSIGN_OR_RETURN(std::string variant, arm.get(fmt::format("kernel.{}.variant", w.kernel)));
  return probe::resolve_kernel_target(kernels::KernelRegistry::global(), w.kernel, variant, "", w.shape, variant);
}

MetricValue from_metric(const Feedback& f, std::string_view name) {
  MetricValue v;
  if (const Metric* m = f.find_metric(name)) {
    v.value = Interval::point(m->value);
    if (m->ci95) v.value = {m->value, std::min(m->ci95->first, m->value), std::max(m->ci95->second, m->value)};
    v.unit = m->unit;
  }
  return v;
}

probe::KernelBenchOptions bench_options(const KernelWorkload& w, const KernelProbeOptions& options) {
  probe::KernelBenchOptions o;
  o.bench.budget_s = w.budget_s;
  o.peaks = options.peaks;
  return o;
}

}  // namespace

Result<KernelMeasurement> measure_kernel_time(const KernelWorkload& w, const Config& arm,
                                              const KernelProbeOptions& options) {
  RECUR_ASSIGN_OR_RETURN(probe::KernelTarget t, target_for(w, arm));
  RECUR_ASSIGN_OR_RETURN(Feedback f, probe::bench_kernel(*t.spec, *t.variant, nullptr, t.shape, bench_options(w, options)));
  if (f.find_metric("time_us") == nullptr) return internal_error("bench.kernel returned no time_us for {}", f.subject);
  MetricValue v = from_metric(f, "time_us");
  return KernelMeasurement{std::move(v), std::move(f)};
}

Result<KernelMeasurement> measure_kernel_ratio(const KernelWorkload& wa, const Config& a, const KernelWorkload& wb,
                                               const Config& b, const KernelProbeOptions& options) {
  RECUR_ASSIGN_OR_RETURN(probe::KernelTarget ta, target_for(wa, a));
  RECUR_ASSIGN_OR_RETURN(probe::KernelTarget tb, target_for(wb, b));
  const probe::KernelBenchTarget base{tb.spec, tb.variant, tb.shape};
  RECUR_ASSIGN_OR_RETURN(Feedback f, probe::bench_kernel_targets({ta.spec, ta.variant, ta.shape}, &base,
                                                                 bench_options(wa, options)));
  if (f.find_metric("ratio") == nullptr) return internal_error("bench.kernel returned no ratio for {}", f.subject);
  MetricValue v = from_metric(f, "ratio");
  return KernelMeasurement{std::move(v), std::move(f)};
}

Result<KernelMeasurement> measure_kernel_ratio(const KernelWorkload& w, const Config& a, const Config& b,
                                               const KernelProbeOptions& options) {
  return measure_kernel_ratio(w, a, w, b, options);
}

Result<KernelCheckMeasurement> measure_kernel_check(const KernelWorkload& w, const Config& a, const Config* b,
                                                    const KernelProbeOptions& options) {
  RECUR_ASSIGN_OR_RETURN(probe::KernelTarget ta, target_for(w, a));
  probe::CheckOptions o;
  o.seeds = w.seeds;
  o.partitions = w.partitions;
  o.peaks = options.peaks;
  if (b) {
    RECUR_ASSIGN_OR_RETURN(probe::KernelTarget tb, target_for(w, *b));
    o.vs = tb.variant;
  }
  RECUR_ASSIGN_OR_RETURN(probe::CheckReport report, probe::check_variant(*ta.spec, *ta.variant, ta.shape, o));
  KernelCheckMeasurement m;
  const std::string against = o.vs ? "variant " + o.vs->name : "reference";
  for (const probe::Comparison& c : report.comparisons) {
    if (c.against != against) continue;
    m.max_rel_err = std::max(m.max_rel_err, c.stats.max_rel);
    m.max_abs_err = std::max(m.max_abs_err, c.stats.max_abs);
  }
  m.feedback = probe::check_feedback(report, o);
  m.pass = m.feedback.verdict == Verdict::kConfirmed;
  return m;
}

}  // namespace recur::gate
