#include "loop/evidence.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>

#include <fmt/format.h>

#include "loop/search_space.h"
#include "loop/timeline_evidence.h"
#include "core/thread_pool.h"
#include "engine/model.h"
#include "gate/kernel_probe.h"
#include "gate/time_split.h"
#include "gate/op_errors.h"
#include "kernels/registry.h"
#include "probe/callgrind.h"
#include "probe/probe_cli.h"

namespace recur::agent {

namespace {

Result<Config> config_of(const gate::GateSpec& spec, std::string_view arm) {
  const gate::Arm* a = spec.find_arm(arm);
  if (a == nullptr) return not_found("gate {}: no arm '{}'", spec.name, arm);
  return gate::arm_config(spec, *a, Config());
}

// "memory-bound (0.81 of the bandwidth roof, 0.12 of the compute roof)".
std::string roofline_class(const Feedback& bench) {
  const Metric* bw = bench.find_metric("bandwidth_frac");
  const Metric* fl = bench.find_metric("compute_frac");
  if (bw == nullptr || fl == nullptr) return "";
  if (bw->value > 1.0)  // faster than DRAM can feed it: the working set lives in cache
    return fmt::format("cache-resident, so not memory-bound: {:.2f}x the DRAM bandwidth roof; the time goes to "
                       "compute and latency ({:.2f} of the compute roof)",
                       bw->value, fl->value);
  const char* cls = bw->value >= fl->value ? "memory-bound" : "compute-bound";
  if (std::max(bw->value, fl->value) < 0.3) cls = "far from both roofs (latency- or overhead-bound)";
  return fmt::format("{}: {:.2f} of the bandwidth roof, {:.2f} of the compute roof", cls, bw->value, fl->value);
}

// Regions must cover at least this share of a kernel's own counted instructions to rank its parts.
constexpr double kMinRegionCoverage = 0.5;

// The parts of a kernel, from the callgrind split, largest first, after the kernel itself. Shares
// are of the kernel's own work: harness regions (kernels::RegionSpec::harness) and the
// unattributed rest are named in the finding but left out.
}  // namespace

void add_region_parts(const kernels::KernelSpec& kernel, const Feedback& split, std::vector<Attribution>& parts,
                      std::vector<std::string>& findings) {
  auto is_harness = [&](const std::string& component) {
    for (const kernels::RegionSpec& r : kernel.regions)
      if (r.harness && component == fmt::format("kernel:{}/{}", kernel.name, r.name)) return true;
    return false;
  };
  std::vector<Attribution> regions;
  std::string left_out;
  double work = 0, unattributed = 0;
  for (const Attribution& a : split.attribution) {
    if (a.component == kUnattributed || is_harness(a.component)) {
      if (a.share >= 0.01) left_out += fmt::format("{}{} {:.0f}%", left_out.empty() ? "" : ", ", a.component, 100 * a.share);
      if (a.component == kUnattributed) unattributed += a.share;
      continue;
    }
    regions.push_back(a);
    work += a.share;
  }
  // A split whose regions miss most of the kernel's own instructions, or a declared region that
  // matched none (its code inlined elsewhere), measures the mapping, not the kernel: a finding,
  // never a ranking.
  if (std::none_of(kernel.regions.begin(), kernel.regions.end(), [](const kernels::RegionSpec& r) { return !r.harness; }))
    return;  // the kernel declares no parts to split into
  std::string empty;
  for (const kernels::RegionSpec& r : kernel.regions) {
    if (r.harness) continue;
    const std::string c = fmt::format("kernel:{}/{}", kernel.name, r.name);
    const bool matched = std::any_of(regions.begin(), regions.end(),
                                     [&](const Attribution& a) { return a.component == c && a.share > 0; });
    if (!matched) empty += fmt::format("{}{}", empty.empty() ? "" : ", ", r.name);
  }
  const double own = work + unattributed;
  if (own > 0 && (work < kMinRegionCoverage * own || !empty.empty())) {
    findings.push_back(fmt::format("broken region mapping of {}: its regions cover {:.0f}% of the kernel's own counted "
                                   "instructions{}; the split is not used to rank its parts",
                                   kernel.name, 100 * work / own,
                                   empty.empty() ? "" : fmt::format(", and {} matched none", empty)));
    return;
  }
  if (work <= 0) return;
  for (Attribution& a : regions) {
    a.evidence = fmt::format("{:.0f}% of all counted instructions; {}", 100 * a.share, a.evidence);
    a.share /= work;
  }
  std::erase_if(regions, [](const Attribution& a) { return a.share < 0.01; });
  std::stable_sort(regions.begin(), regions.end(), [](const Attribution& a, const Attribution& b) { return a.share > b.share; });
  std::string line = "instruction split of the kernel's work:";
  for (const Attribution& a : regions) line += fmt::format(" {} {:.0f}%", a.component, 100 * a.share);
  if (!left_out.empty()) line += fmt::format(" (left out: {})", left_out);
  findings.push_back(line);
  for (Attribution& a : regions) parts.push_back(std::move(a));
}

namespace {

Result<Evidence> kernel_time_evidence(const Episode& ep, const gate::GateSpec& spec, const Config& cand,
                                      ExperimentLog& log, const AttributeOptions& options, Evidence ev) {
  const gate::KernelWorkload w = kernel_workload_for(spec, ep.candidate);
  RECUR_ASSIGN_OR_RETURN(std::string variant, cand.get(fmt::format("kernel.{}.variant", w.kernel)));
  RECUR_ASSIGN_OR_RETURN(probe::KernelTarget t, probe::resolve_kernel_target(kernels::KernelRegistry::global(),
                                                                            w.kernel, variant, "", w.shape, variant));
  const std::string component = "kernel:" + w.kernel;
  ev.components.push_back({component, 1.0, fmt::format("`{}` times {} variant {}", ev.condition, w.kernel, t.variant->name)});
  if (options.instruction_counts) {
    RECUR_ASSIGN_OR_RETURN(
        LoggedExperiment split,
        log.run({.hypothesis = fmt::format("the instruction split of {} variant {} shows which part costs most", w.kernel,
                                           t.variant->name),
                 .probe = "bench.callgrind", .tier = 0, .config_diff = {}},
                [&] {
                  return probe::bench_callgrind(*t.spec, *t.variant, nullptr, t.shape,
                                                probe::CallgrindOptions{.dump_dir = options.callgrind_dir});
                },
                [](const Feedback&) { return Decision::kNone; }));
    if (split.feedback.verdict != Verdict::kFailed) add_region_parts(*t.spec, split.feedback, ev.components, ev.findings);
  }
  RECUR_ASSIGN_OR_RETURN(
      LoggedExperiment bench,
      log.run({.hypothesis = fmt::format("the roofline class of {} variant {} says what bounds it", w.kernel, t.variant->name),
               .probe = "bench.kernel", .tier = 2, .config_diff = {}},
              [&]() -> Result<Feedback> {
                RECUR_ASSIGN_OR_RETURN(gate::KernelMeasurement m, gate::measure_kernel_time(w, cand, {}));
                return std::move(m.feedback);
              },
              [](const Feedback&) { return Decision::kNone; }));
  if (std::string cls = roofline_class(bench.feedback); !cls.empty()) ev.findings.push_back(cls);
  return ev;
}

Result<Evidence> kernel_numerics_evidence(const Episode& ep, const gate::GateSpec& spec, const Config& cand,
                                          ExperimentLog& log, Evidence ev) {
  const gate::KernelWorkload w = kernel_workload_for(spec, ep.candidate);
  RECUR_ASSIGN_OR_RETURN(
      LoggedExperiment check,
      log.run({.hypothesis = fmt::format("check localizes the error of {}", w.kernel), .probe = "check.kernel", .tier = 1,
               .config_diff = {}},
              [&]() -> Result<Feedback> {
                RECUR_ASSIGN_OR_RETURN(gate::KernelCheckMeasurement m, gate::measure_kernel_check(w, cand, nullptr, {}));
                return std::move(m.feedback);
              },
              [](const Feedback&) { return Decision::kNone; }));
  ev.components.push_back({"kernel:" + w.kernel, 1.0, fmt::format("check {} max_rel_err", w.kernel)});
  for (const std::string& n : check.feedback.notes)
    if (n.find("worst") != std::string::npos || n.find("shard") != std::string::npos) ev.findings.push_back(n);
  return ev;
}

// The gate's engine model and the candidate's engine pool (its engine.pool_spin_us, the gate's
// thread count), for a probe outside the gate; the probe's Feedback states those conditions.
struct WorkloadEngine {
  std::string path;
  std::unique_ptr<Model> model;
  ThreadPoolOptions pool_options;
  std::unique_ptr<ThreadPool> pool;
  std::string conditions() const { return probe_conditions_note(*pool, pool_options); }
};
Result<WorkloadEngine> load_workload_engine(const gate::GateSpec& spec, const Config& candidate) {
  WorkloadEngine e;
  RECUR_ASSIGN_OR_RETURN(e.path, gate::resolve_model_path(*spec.engine));
  RECUR_ASSIGN_OR_RETURN(e.model, load_model(e.path));
  RECUR_ASSIGN_OR_RETURN(e.pool_options, engine_pool_options(candidate, spec.threads));
  RECUR_ASSIGN_OR_RETURN(e.pool, ThreadPool::create(e.pool_options));
  return e;
}

// Where an engine disagreement comes from: op-by-op error of the candidate against the other
// arm (check.engine_ops), attributed to the components of the ops that add the error.
Result<Evidence> op_error_evidence(const gate::GateSpec& spec, const std::string& cand, const std::string& ref,
                                   ExperimentLog& log, Evidence ev) {
  RECUR_ASSIGN_OR_RETURN(Config ca, config_of(spec, cand));
  RECUR_ASSIGN_OR_RETURN(Config cb, config_of(spec, ref));
  const gate::EngineWorkload& w = *spec.engine;
  RECUR_ASSIGN_OR_RETURN(
      LoggedExperiment ops,
      log.run({.hypothesis = fmt::format("op-by-op errors of {} against {} show which ops add the disagreement in `{}`",
                                         cand, ref, ev.condition),
               .probe = "check.engine_ops", .tier = 3, .config_diff = {}},
              [&]() -> Result<Feedback> {
                RECUR_ASSIGN_OR_RETURN(WorkloadEngine e, load_workload_engine(spec, ca));
                gate::OpErrorOptions o;
                o.prompts = w.prompts;
                o.decode_tokens = w.decode_tokens;
                RECUR_ASSIGN_OR_RETURN(gate::OpErrorsResult r,
                                       gate::measure_op_errors(*e.model, e.path, *e.pool, o, {cand, ca}, {ref, cb}));
                r.feedback.notes.push_back(e.conditions());
                return std::move(r.feedback);
              },
              [](const Feedback&) { return Decision::kNone; }));
  std::vector<Attribution> parts;
  for (const Attribution& a : ops.feedback.attribution)
    if (a.component != kUnattributed && a.share > 0) parts.push_back(a);
  std::stable_sort(parts.begin(), parts.end(), [](const Attribution& x, const Attribution& y) { return x.share > y.share; });
  for (const Attribution& a : parts) {
    ev.components.push_back(a);
    ev.findings.push_back(fmt::format("{} adds {:.0f}% of the error ({})", a.component, 100 * a.share, a.evidence));
  }
  for (const std::string& n : ops.feedback.notes)
    if (n.find("first") != std::string::npos) ev.findings.push_back(n);
  return ev;
}

// Where the candidate's engine time goes, by component, measured (analyze.time_split): against
// the other arm of the throughput condition when the two differ in some knob (what got slower),
// else the candidate alone (what is big: no arm holds the answer).
Result<Evidence> time_split_evidence(const gate::GateSpec& spec, const std::string& cand,
                                     const std::vector<gate::MetricRequest>& calls, ExperimentLog& log,
                                     const std::string& trace_dir, Evidence ev) {
  std::string other;
  gate::SplitPhase phase = gate::SplitPhase::kDecode;
  for (const gate::MetricRequest& r : calls) {
    if (r.def->source != gate::MetricSource::kEngineThroughput || (r.arm != cand && r.vs != cand)) continue;
    other = r.arm == cand ? r.vs : r.arm;
    phase = r.def->name.starts_with("prefill") ? gate::SplitPhase::kPrefill : gate::SplitPhase::kDecode;
    break;
  }
  RECUR_ASSIGN_OR_RETURN(Config ca, config_of(spec, cand));
  std::optional<Config> cb;
  if (!other.empty()) {
    RECUR_ASSIGN_OR_RETURN(Config c, config_of(spec, other));
    bool differs = false;
    for (const KnobSpec* k : KnobRegistry::global().all())
      if (!k->name.ends_with("[]") && effective_value(ca, *k) != effective_value(c, *k)) differs = true;
    for (const auto& [k, v] : ca.overrides())
      if (k.find('[') != std::string::npos && c.get(k).value_or("") != v) differs = true;
    for (const auto& [k, v] : c.overrides())
      if (k.find('[') != std::string::npos && ca.get(k).value_or("") != v) differs = true;
    if (differs) cb = std::move(c);
  }
  const gate::EngineWorkload& w = *spec.engine;
  const std::string trace_out =
      trace_dir.empty() ? "" : (std::filesystem::path(trace_dir) / fmt::format("time-split-step-{}.json", log.steps())).string();
  RECUR_ASSIGN_OR_RETURN(
      LoggedExperiment split,
      log.run({.hypothesis = cb ? fmt::format("the components where {} spends more time than {} explain `{}`", cand,
                                              other, ev.condition)
                                : fmt::format("the components where {} spends its time bound `{}` (no arm holds the "
                                              "answer: {} and {} run the same configuration)",
                                              cand, ev.condition, cand, other.empty() ? "the reference" : other),
               .probe = "analyze.time_split", .tier = 3, .config_diff = {}},
              [&]() -> Result<Feedback> {
                RECUR_ASSIGN_OR_RETURN(WorkloadEngine e, load_workload_engine(spec, ca));
                const gate::NamedConfig a{cand, ca};
                std::optional<gate::NamedConfig> b;
                if (cb) b = gate::NamedConfig{other, *cb};
                RECUR_ASSIGN_OR_RETURN(gate::TimeSplitResult r,
                                       gate::measure_time_split(*e.model, *e.pool, w, phase, a, b ? &*b : nullptr, trace_out));
                r.feedback.notes.push_back(e.conditions());
                return std::move(r.feedback);
              },
              [](const Feedback&) { return Decision::kNone; }));
  for (const Attribution& a : split.feedback.attribution) {
    if (a.component == kUnattributed || a.share <= 0) continue;
    ev.components.push_back(a);
    ev.findings.push_back(fmt::format("{} takes {:.0f}% of the {} ({})", a.component, 100 * a.share,
                                      a.evidence.find(" against ") != std::string::npos ? "excess time" : "time",
                                      a.evidence));
  }
  return ev;
}

// The knobs in which two arms differ, by the components they are tagged with.
Result<Evidence> config_diff_evidence(const gate::GateSpec& spec, const std::vector<gate::MetricRequest>& calls,
                                      ExperimentLog& log, Evidence ev) {
  std::string a = calls.front().arm, b = calls.front().vs;
  for (const gate::MetricRequest& r : calls)
    if (!r.vs.empty()) a = r.arm, b = r.vs;
  RECUR_ASSIGN_OR_RETURN(Config ca, config_of(spec, a));
  Config cb;
  if (!b.empty()) {
    RECUR_ASSIGN_OR_RETURN(cb, config_of(spec, b));
  }
  auto probe = [&]() -> Result<Feedback> {
    Feedback f;
    f.probe = "analyze.config_diff";
    f.tier = 0;
    f.subject = fmt::format("arms {} vs {}", a, b.empty() ? "defaults" : b);
    f.verdict = Verdict::kConfirmed;
    std::vector<std::pair<const KnobSpec*, std::string>> diffs;
    for (const KnobSpec* k : KnobRegistry::global().all()) {
      const std::string va = effective_value(ca, *k), vb = effective_value(cb, *k);
      if (va != vb) diffs.emplace_back(k, fmt::format("{}: {} vs {}", k->name, va, vb));
    }
    std::map<std::string, std::vector<std::string>> by_component;
    for (const auto& [k, line] : diffs)
      for (const std::string& c : k->components) by_component[c].push_back(line);
    for (const auto& [c, lines] : by_component) {
      const double share = double(lines.size()) / double(std::max<size_t>(1, diffs.size()));
      std::string evidence;
      for (const std::string& l : lines) evidence += (evidence.empty() ? "" : "; ") + l;
      f.attribution.push_back({c, std::min(1.0, share), evidence});
    }
    std::stable_sort(f.attribution.begin(), f.attribution.end(),
                     [](const Attribution& x, const Attribution& y) { return x.share > y.share; });
    f.add_metric("knobs_differing", double(diffs.size()));
    if (diffs.empty()) f.notes.push_back("the arms differ in no knob: the gap is not a configuration difference");
    return f;
  };
  RECUR_ASSIGN_OR_RETURN(
      LoggedExperiment diff,
      log.run({.hypothesis = fmt::format("the knobs in which {} and {} differ explain `{}`", a, b.empty() ? "defaults" : b,
                                         ev.condition),
               .probe = "analyze.config_diff", .tier = 0, .config_diff = {}},
              probe, [](const Feedback&) { return Decision::kNone; }));
  for (const Attribution& at : diff.feedback.attribution) {
    ev.components.push_back(at);
    ev.findings.push_back(fmt::format("{} ({})", at.component, at.evidence));
  }
  return ev;
}

}  // namespace

bool is_kernel_time(gate::MetricSource s) {
  return s == gate::MetricSource::kKernelTime || s == gate::MetricSource::kKernelRatio;
}

std::vector<gate::MetricRequest> metric_calls(const gate::Expr& e) {
  std::vector<gate::MetricRequest> out;
  std::vector<const gate::Expr*> stack = {&e};
  while (!stack.empty()) {
    const gate::Expr* x = stack.back();
    stack.pop_back();
    if (x->op == gate::ExprOp::kCall) {
      out.push_back(gate::request_for_call(*x));
      continue;
    }
    if (x->rhs) stack.push_back(x->rhs.get());
    if (x->lhs) stack.push_back(x->lhs.get());
  }
  return out;
}

gate::KernelWorkload kernel_workload_for(const gate::GateSpec& spec, std::string_view arm) {
  if (!spec.kernel) return gate::KernelWorkload{};
  return gate::arm_kernel_workload(spec, arm);
}

Result<Evidence> attribute_gap(const Episode& episode, const std::map<std::string, std::string>& config,
                               const GateState& gate, ExperimentLog& log, const AttributeOptions& options) {
  const gate::GateSpec spec = gate_with_candidate(episode, config);
  const gate::Condition* c = gate.deciding(spec);
  if (c == nullptr) return make_error(ErrorCode::kFailedPrecondition, "attribute: gate {} has no failing condition to attribute", spec.name);
  Evidence ev;
  ev.condition = c->text;
  const std::vector<gate::MetricRequest> calls = metric_calls(c->expr);
  RECUR_ASSIGN_OR_RETURN(Config cand, config_of(spec, episode.candidate));
  auto touches_candidate = [&](const gate::MetricRequest& r) { return r.arm == episode.candidate || r.vs == episode.candidate; };
  for (const gate::MetricRequest& r : calls) {
    if (!touches_candidate(r)) continue;
    if (is_kernel_time(r.def->source)) return kernel_time_evidence(episode, spec, cand, log, options, std::move(ev));
    if (r.def->source == gate::MetricSource::kKernelCheck)
      return kernel_numerics_evidence(episode, spec, cand, log, std::move(ev));
  }
  for (const gate::MetricRequest& r : calls) {
    if (r.def->source != gate::MetricSource::kEnginePair || r.vs.empty() || !touches_candidate(r)) continue;
    const std::string other = r.arm == episode.candidate ? r.vs : r.arm;
    RECUR_ASSIGN_OR_RETURN(ev, op_error_evidence(spec, episode.candidate, other, log, std::move(ev)));
    if (!ev.components.empty()) return ev;
  }
  if (calls.empty()) return make_error(ErrorCode::kFailedPrecondition, "attribute: condition `{}` measures nothing", c->text);
  const bool throughput = std::any_of(calls.begin(), calls.end(), [&](const gate::MetricRequest& r) {
    return r.def->source == gate::MetricSource::kEngineThroughput && touches_candidate(r);
  });
  if (throughput && spec.program && !spec.program->background.empty()) {
    RECUR_ASSIGN_OR_RETURN(ev, timeline_evidence(spec, episode.candidate, log, options.trace_dir, std::move(ev)));
    if (!ev.components.empty()) return ev;
  } else if (throughput && spec.program) {
    // A program that cannot write a trace leaves the knob difference as the only lead.
    std::string reference;
    for (const gate::MetricRequest& r : calls)
      if (r.def->source == gate::MetricSource::kEngineThroughput && touches_candidate(r))
        reference = r.arm == episode.candidate ? r.vs : r.arm;
    auto split = program_time_split_evidence(spec, episode.candidate, reference, log, options.trace_dir, ev);
    if (split && !split->components.empty()) return split;
    if (!split) ev.findings.push_back(fmt::format("no traced run of the program: {}", split.error().message()));
  }
  if (throughput && spec.engine && !spec.program) {
    RECUR_ASSIGN_OR_RETURN(ev, time_split_evidence(spec, episode.candidate, calls, log, options.trace_dir, std::move(ev)));
    if (!ev.components.empty()) return ev;
  }
  return config_diff_evidence(spec, calls, log, std::move(ev));
}

}  // namespace recur::agent
