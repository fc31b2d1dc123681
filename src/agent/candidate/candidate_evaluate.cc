#include "candidate/candidate_evaluate.h"

#include <cmath>
#include <cstring>
#include <random>

#include <fmt/format.h>

#include "candidate/candidate_cost.h"
#include "probe/bench.h"
#include "probe/check.h"
#include "probe/kernel_harness.h"

namespace recur::agent {

namespace {

using kernels::KernelSpec;

// Ships one call's tensors to the runner and back. Errors are kept (a KernelFn cannot fail):
// the outputs then keep check's sentinels, and the evaluation reports the first error.
struct RemoteCalls {
  KernelRunnerProcess* runner = nullptr;
  std::string kernel, variant;
  std::string error;

  void call(const kernels::KernelCall& c) {
    if (!error.empty()) return;
    const SharedLayout l = shared_layout(c.inputs, c.outputs);
    auto base = runner->shared(l.total);
    if (!base) {
      error = base.error().message();
      return;
    }
    size_t i = 0;
    for (auto views : {c.inputs, c.outputs}) {  // outputs too: the sentinels must reach the runner
      for (const TensorView& v : views) {
        if (!v.is_contiguous()) {
          error = "the harness passed a strided tensor; candidates are checked unpartitioned";
          return;
        }
        std::memcpy(*base + l.offsets[i], v.data(), l.bytes[i]);
        ++i;
      }
    }
    Status s = runner->run({.kernel = kernel, .variant = variant, .shape = c.shape.to_string(), .iters = 1,
                            .offsets = l.offsets});
    if (!s) {
      error = s.error().message();
      return;
    }
    for (size_t o = 0; o < c.outputs.size(); ++o) {
      const size_t k = c.inputs.size() + o;
      std::memcpy(c.outputs[o].data(), *base + l.offsets[k], l.bytes[k]);
    }
  }
};

struct CandidateTarget {
  const KernelSpec* spec = nullptr;
  std::string variant;
  bool is_new = true;
};

Result<CandidateTarget> find_candidate_variant(const kernels::KernelRegistry& reg,
                                               const std::vector<std::pair<std::string, std::string>>& offered,
                                               const EvaluateOptions& o) {
  std::vector<std::string> matches, all;
  CandidateTarget t;
  for (const auto& [k, v] : offered) {
    all.push_back(k + "/" + v);
    if (!o.kernel.empty() && k != o.kernel) continue;
    const KernelSpec* spec = reg.find(k);
    if (spec == nullptr) continue;  // a kernel the main tree lacks has no reference here
    const bool is_new = spec->find_variant(v) == nullptr;
    if (o.variant.empty() ? !is_new : v != o.variant) continue;
    matches.push_back(k + "/" + v);
    t = {spec, v, is_new};
  }
  if (matches.size() == 1) return t;
  const std::string which = o.kernel.empty() ? "any kernel of the main tree" : "kernel " + o.kernel;
  if (matches.empty())
    return make_error(ErrorCode::kNotFound,
                      "the candidate's runner offers {} for {}; {} (it offers: {})",
                      o.variant.empty() ? "no new variant" : "no variant " + o.variant, which,
                      o.variant.empty() ? "a patch that changes an existing variant names it with --variant"
                                        : "check the name",
                      fmt::join(all, " "));
  return invalid_argument("the candidate adds several variants ({}); name one with --kernel and --variant",
                          fmt::join(matches, " "));
}

// Step 1: check against the float64 reference with seeds nobody knew before.
Feedback run_candidate_check(const KernelSpec& spec, const kernels::Shape& shape, RemoteCalls& remote,
                             std::random_device& rd, bool& passed) {
  kernels::VariantSpec proxy{.name = remote.variant, .isa = Isa::kScalar, .help = "the candidate's runner",
                             .run = [&remote](const kernels::KernelCall& c) { remote.call(c); }};
  probe::CheckOptions co;
  co.seeds = {evaluator_seed(rd), evaluator_seed(rd), evaluator_seed(rd)};
  Feedback cf;
  auto report = probe::check_variant(spec, proxy, shape, co);
  if (!report) {
    cf.verdict = Verdict::kFailed;
    cf.notes.push_back("check could not run: " + report.error().message());
  } else {
    cf = probe::check_feedback(*report, co);
  }
  passed = cf.verdict == Verdict::kConfirmed && remote.error.empty();
  return cf;
}

// Out-of-tolerance elements of the instance's outputs against the reference on `inputs`.
int64_t outputs_out_of_tolerance(const KernelSpec& spec, const probe::KernelInstance& inst,
                                 const std::vector<std::vector<double>>& inputs) {
  std::vector<std::vector<double>> want(spec.outputs.size()), mag(spec.outputs.size());
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    want[i].resize(size_t(inst.outputs()[i].numel()));
    mag[i].resize(want[i].size());
  }
  spec.reference(inst.shape(), inputs, want, mag);
  int64_t bad = 0;
  for (size_t i = 0; i < spec.outputs.size(); ++i) {
    const std::vector<double> got = inst.output_values(i);
    // The kernel's bound (a candidate variant's own tolerances are not known to the evaluator).
    const auto own = spec.tolerances.find(spec.outputs[i].dtype);
    const kernels::Tolerance tol =
        own != spec.tolerances.end() ? own->second : probe::default_tolerance(spec.outputs[i].dtype);
    for (size_t e = 0; e < got.size(); ++e) {
      const double err = std::fabs(got[e] - want[i][e]);
      bad += !(err <= tol.atol + tol.rtol * mag[i][e]) && !(std::isnan(got[e]) && std::isnan(want[i][e]));
    }
  }
  return bad;
}

// Step 2: interleaved timing against the main tree's best variant, both through runners.
Status run_candidate_bench(const KernelSpec& spec, const kernels::Shape& shape, KernelRunnerProcess& candidate,
                           const std::string& variant, const EvaluateOptions& o, std::random_device& rd, Feedback& f) {
  const kernels::VariantSpec* best = spec.best_variant();
  if (best == nullptr) return make_error(ErrorCode::kUnsupported, "kernel {}: no variant runs on this machine", spec.name);
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<KernelRunnerProcess> baseline, KernelRunnerProcess::start(o.baseline));
  RECUR_ASSIGN_OR_RETURN(probe::KernelInstance inst, probe::KernelInstance::make(spec, shape));
  const SharedLayout l = shared_layout(inst.inputs(), inst.outputs());
  RECUR_ASSIGN_OR_RETURN(char* cand_mem, candidate.shared(l.total));
  RECUR_ASSIGN_OR_RETURN(char* base_mem, baseline->shared(l.total));
  // The inputs now in shared memory, and those of the candidate's last timed sample: its output
  // is checked against them afterwards.
  std::vector<std::vector<double>> last_inputs, candidate_inputs;
  bool candidate_ran = false;
  // Fresh inputs before every sample (untimed), the same for both arms.
  auto refill = [&] {
    if (candidate_ran) candidate_inputs = std::move(last_inputs);
    candidate_ran = false;
    last_inputs = inst.fill_inputs(probe::Distribution::kNormal, evaluator_seed(rd));
    for (size_t i = 0; i < inst.inputs().size(); ++i) {
      std::memcpy(cand_mem + l.offsets[i], inst.inputs()[i].data(), l.bytes[i]);
      std::memcpy(base_mem + l.offsets[i], inst.inputs()[i].data(), l.bytes[i]);
    }
  };
  refill();
  std::string error;
  auto arm = [&](KernelRunnerProcess& runner, std::string v, bool* ran) {
    return probe::BenchArm{v, [&runner, &error, &spec, &shape, &l, v, ran](int64_t iters) {
                             if (!error.empty()) return;
                             if (ran != nullptr) *ran = true;
                             Status s = runner.run({.kernel = spec.name, .variant = v, .shape = shape.to_string(),
                                                    .iters = iters, .offsets = l.offsets});
                             if (!s) error = s.error().message();
                           }};
  };
  probe::BenchOptions bo;
  bo.budget_s = o.bench_budget_s;
  bo.target_sample_s = 2e-3;  // a request's round trip (~20 us) stays near 1% of a sample
  bo.between_samples = refill;
  if (o.progress) o.progress(fmt::format("bench: {} (candidate) vs {} (main tree), {:.1f} s", variant, best->name, bo.budget_s));
  const probe::BenchResult r = probe::bench_compare(arm(*baseline, best->name, nullptr), arm(candidate, variant, &candidate_ran), bo);
  if (!error.empty()) return make_error(ErrorCode::kFailedPrecondition, "bench: {}", error);
  probe::add_bench_metrics(r, true, f);
  // The last sample's output must still be right: a runner that skips work when timed fails here.
  for (size_t i = 0; i < inst.outputs().size(); ++i) {
    const size_t k = inst.inputs().size() + i;
    std::memcpy(inst.outputs()[i].data(), cand_mem + l.offsets[k], l.bytes[k]);
  }
  const auto& timed_inputs = candidate_ran ? last_inputs : candidate_inputs;
  if (timed_inputs.empty()) return make_error(ErrorCode::kInternal, "bench: the candidate arm never ran");
  if (const int64_t bad = outputs_out_of_tolerance(spec, inst, timed_inputs); bad > 0)
    return make_error(ErrorCode::kFailedPrecondition,
                      "bench: after timing, {} output elements differ from the reference on the last inputs: the "
                      "candidate does not compute every timed call",
                      bad);
  f.verdict = probe::verdict_for_hypothesis(r.decision.verdict, probe::BenchVerdict::kFaster);
  f.subject += fmt::format(" vs {}", best->name);
  return ok_status();
}

}  // namespace

void evaluate_candidate(const kernels::KernelRegistry& reg, const EvaluateOptions& o, Feedback& f) {
  auto fail = [&f](std::string why) {
    f.verdict = Verdict::kFailed;
    f.notes.insert(f.notes.begin(), std::move(why));
  };
  auto runner = KernelRunnerProcess::start(o.candidate);
  if (!runner) return fail("the candidate's runner did not start: " + runner.error().message());
  auto offered = (*runner)->variants();
  if (!offered) return fail(offered.error().message());
  auto target = find_candidate_variant(reg, *offered, o);
  if (!target) return fail(target.error().message());
  const KernelSpec& spec = *target->spec;
  auto shape = o.shape.empty() ? Result<kernels::Shape>(spec.default_shape()) : spec.parse_shape(o.shape);
  if (!shape) return fail(shape.error().message());
  f.subject = fmt::format("kernel:{} variant={} ({} candidate) shape={}", spec.name, target->variant,
                          target->is_new ? "new" : "changed", shape->to_string());
  if (f.hypothesis.empty())
    f.hypothesis = fmt::format("{} is correct and faster than the main tree's best variant", target->variant);

  std::random_device rd;
  if (o.progress) o.progress(fmt::format("check: {} {} against the float64 reference", spec.name, target->variant));
  RemoteCalls remote{.runner = runner->get(), .kernel = spec.name, .variant = target->variant, .error = ""};
  bool passed = false;
  const Feedback cf = run_candidate_check(spec, *shape, remote, rd, passed);
  for (const char* name : {"max_abs", "max_rel", "frac_out_of_tolerance", "comparisons", "comparisons_failed"})
    if (const Metric* m = cf.find_metric(name)) f.metrics.push_back(*m);
  for (const std::string& n : cf.notes) f.notes.push_back("check: " + n);
  if (!remote.error.empty()) return fail("the candidate's runner failed during check: " + remote.error);
  if (!passed) {
    f.next.push_back(fmt::format("fix {} {}: check {} (see the check notes for the worst element)", spec.name,
                                 target->variant, verdict_name(cf.verdict)));
    return fail(fmt::format("check {}: the candidate's {} does not match the float64 reference", verdict_name(cf.verdict),
                            target->variant));
  }
  if (!o.cost_dir.empty()) {
    if (o.progress) o.progress(fmt::format("cost: instructions of fresh and repeated calls of {} under callgrind", target->variant));
    auto cost = count_candidate_cost(spec, *shape, target->variant, {.runner = o.candidate, .dir = o.cost_dir}, rd);
    if (!cost) {
      f.notes.push_back("cost check not run (memoization not ruled out): " + cost.error().message());
    } else {
      f.add_metric("instructions_per_call", cost->fresh_call, "instructions");
      f.add_metric("repeat_cost_ratio", cost->repeat_ratio());
      if (cost->repeat_ratio() < kMinRepeatCostRatio)
        return fail(fmt::format(
            "cost check: a call on the inputs of the call before costs {:.2f} of a call on fresh inputs ({:.0f} vs {:.0f} "
            "instructions under callgrind, at least {} expected): the candidate skips work on repeated inputs, which "
            "timed samples of repeated calls would reward",
            cost->repeat_ratio(), cost->repeat_call, cost->fresh_call, kMinRepeatCostRatio));
    }
  }
  if (Status s = run_candidate_bench(spec, *shape, **runner, target->variant, o, rd, f); !s) return fail(s.error().message());
  if (f.verdict == Verdict::kConfirmed)
    f.next.push_back(fmt::format("keep the patch: {} {} passes check and is faster; then run the episode's gate",
                                 spec.name, target->variant));
  else if (f.verdict == Verdict::kRefuted)
    f.next.push_back(fmt::format("bench.callgrind {} --variant {}: find where the time goes before another patch",
                                 spec.name, spec.best_variant()->name));
  else
    f.next.push_back("candidate build again with a larger --budget-s: the bench could not decide");
}

}  // namespace recur::agent
