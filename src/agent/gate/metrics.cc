#include "gate/metrics.h"

#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace recur::gate {

namespace {

using S = MetricSource;

constexpr MetricDef kMetrics[] = {
    {"prefill_tok_s", S::kEngineThroughput, 1, 1, 0, false, "tok/s", "bench.engine", 3, true,
     "prompt tokens per second: median over the workload's runs, bootstrap 95% CI"},
    {"decode_tok_s", S::kEngineThroughput, 1, 1, 0, false, "tok/s", "bench.engine", 3, true,
     "generated tokens per second: median over the workload's runs, bootstrap 95% CI"},
    {"prefill_ratio", S::kEngineThroughput, 2, 2, 0, false, "", "bench.engine", 3, true,
     "prefill tok/s of a / of b, paired per interleaved round: median with bootstrap 95% CI (narrower than two "
     "independent CIs)"},
    {"decode_ratio", S::kEngineThroughput, 2, 2, 0, false, "", "bench.engine", 3, true,
     "decode tok/s of a / of b, paired per interleaved round: median with bootstrap 95% CI"},
    {"tokens_equal", S::kEnginePair, 2, 2, 0, true, "", "check.engine", 3, true,
     "a's greedy tokens equal b's on every prompt"},
    {"token_match_frac", S::kEnginePair, 2, 2, 0, false, "", "check.engine", 3, true,
     "fraction of b's greedy tokens that a also predicts, a fed b's tokens"},
    {"logits_max_abs_err", S::kEnginePair, 2, 2, 0, false, "", "check.engine", 3, true,
     "max |logit_a - logit_b| over every position, a fed b's tokens"},
    {"logits_max_rel_err", S::kEnginePair, 2, 2, 0, false, "", "check.engine", 3, true,
     "max over positions of max|logit_a - logit_b| / max|logit_b|, a fed b's tokens"},
    {"op_max_rel_err", S::kEngineOps, 2, 2, 1, false, "", "check.engine_ops", 3, true,
     "max over positions of max|a - b| / max|b| of one op's output, a fed b's greedy tokens: "
     "op_max_rel_err(cand vs ref, \"layer.0.kda.all_reduce\"); `recur engine ops-diff` lists the ops"},
    {"time_us", S::kKernelTime, 1, 1, 0, false, "us", "bench.kernel", 2, true,
     "the kernel's time per call with the arm's variant: median, bootstrap 95% CI"},
    {"time_ratio", S::kKernelRatio, 2, 2, 0, false, "", "bench.kernel", 2, true,
     "time of a / time of b, interleaved ABBA rounds, median log-ratio with 95% CI"},
    {"speedup", S::kKernelRatio, 2, 2, 0, false, "", "bench.kernel", 2, true, "time of b / time of a (1 / time_ratio)"},
    {"max_rel_err", S::kKernelCheck, 1, 2, 0, false, "", "check.kernel", 1, true,
     "worst |err| / magnitude of a against the float64 reference, or against b's output"},
    {"max_abs_err", S::kKernelCheck, 1, 2, 0, false, "", "check.kernel", 1, true,
     "worst |err| of a against the float64 reference, or against b's output"},
    {"check_pass", S::kKernelCheck, 1, 2, 0, true, "", "check.kernel", 1, true,
     "check confirms a (every comparison within tolerance, no defence fired)"},
    {"zone_time_us", S::kTraceZone, 1, 1, 1, false, "us", "analyze.zone_time", 3, true,
     "time per engine run in the trace zones a selector matches (union per thread, summed), e.g. "
     "zone_time_us(candidate, \"attention\") or zone_time_us(c, \"path~kda_mixer\")"},
};

std::string metric_names() {
  std::vector<std::string_view> names;
  for (const MetricDef& d : kMetrics) names.push_back(d.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

enum class Type { kNumber, kTruth };

std::string_view type_name(Type t) { return t == Type::kNumber ? "a number" : "a truth value"; }

struct Checker {
  std::string_view text;
  const ExprSource& source;
  const ConditionContext& ctx;
  std::vector<MetricRequest>& requests;

  unexpected<Error> fail(size_t offset, std::string_view message) const {
    return unexpected<Error>(source.error(text, offset, message));
  }

  Result<Type> call(const Expr& e) {
    const MetricDef* def = find_metric_def(e.name);
    if (def == nullptr) return fail(e.offset, fmt::format("unknown metric '{}'; metrics: {}", e.name, metric_names()));
    if (!def->implemented)
      return fail(e.offset, fmt::format("metric '{}' is declared but not implemented yet: it needs the trace "
                                        "analyses of src/analyze (zone breakdown), which this build does not have",
                                        e.name));
    std::vector<const CallArg*> arms, strings;
    for (const CallArg& a : e.args) {
      if (a.is_string) {
        strings.push_back(&a);
      } else {
        if (!strings.empty()) return fail(a.offset, fmt::format("{}: arms come before quoted arguments", e.name));
        arms.push_back(&a);
      }
    }
    const int n = int(arms.size());
    if (n < def->min_arms || n > def->max_arms) {
      std::string want = def->min_arms == def->max_arms ? fmt::format("{}", def->min_arms)
                                                        : fmt::format("{} or {}", def->min_arms, def->max_arms);
      std::string form = def->max_arms == 2 ? fmt::format("{}(a vs b)", e.name) : fmt::format("{}(arm)", e.name);
      if (def->min_arms == 1 && def->max_arms == 2) form = fmt::format("{}(arm) or {}(a vs b)", e.name, e.name);
      return fail(e.offset, fmt::format("{} takes {} arm{}, got {}: write {}", e.name, want,
                                        def->max_arms == 1 ? "" : "s", n, form));
    }
    if (int(strings.size()) != def->strings)
      return fail(e.offset, fmt::format("{} takes {} quoted argument{}, got {}", e.name, def->strings,
                                        def->strings == 1 ? "" : "s", strings.size()));
    for (const CallArg* a : arms) {
      if (std::find(ctx.arms.begin(), ctx.arms.end(), a->text) == ctx.arms.end())
        return fail(a->offset, fmt::format("unknown arm '{}'; arms: {}", a->text, fmt::join(ctx.arms, ", ")));
    }
    if (n == 2 && arms[0]->text == arms[1]->text)
      return fail(arms[1]->offset, fmt::format("{} compares two different arms, got '{}' twice", e.name, arms[0]->text));
    const bool engine = def->source == S::kEngineThroughput || def->source == S::kEnginePair ||
                        def->source == S::kEngineOps || def->source == S::kTraceZone;
    if (def->source == S::kEngineThroughput && ctx.has_engine && ctx.has_program)
      return fail(e.offset, fmt::format("{} is ambiguous: the spec has both [workload.engine] and [workload.program]; "
                                        "keep one of them",
                                        e.name));
    if (def->source == S::kEngineThroughput && !ctx.has_engine && !ctx.has_program)
      return fail(e.offset, fmt::format("{} measures throughput, but the spec has neither [workload.engine] nor "
                                        "[workload.program]",
                                        e.name));
    if (engine && def->source != S::kEngineThroughput && !ctx.has_engine)
      return fail(e.offset, fmt::format("{} measures the engine, but the spec has no [workload.engine] table{}", e.name,
                                        ctx.has_program ? " (a program workload gives throughput metrics only)" : ""));
    if (!engine && !ctx.has_kernel)
      return fail(e.offset, fmt::format("{} measures a kernel, but the spec has no [workload.kernel] table", e.name));
    MetricRequest r = request_for_call(e);
    if (std::find(requests.begin(), requests.end(), r) == requests.end()) requests.push_back(std::move(r));
    return def->boolean ? Type::kTruth : Type::kNumber;
  }

  Result<Type> expect(const Expr& e, Type want, std::string_view role) {
    RECUR_ASSIGN_OR_RETURN(Type got, visit(e));
    if (got != want) return fail(e.offset, fmt::format("{} must be {}, got {}", role, type_name(want), type_name(got)));
    return got;
  }

  Result<Type> visit(const Expr& e) {
    switch (e.op) {
      case ExprOp::kNumber: return Type::kNumber;
      case ExprOp::kCall: return call(e);
      case ExprOp::kNeg:
        RECUR_RETURN_IF_ERROR(expect(*e.lhs, Type::kNumber, "the operand of '-'"));
        return Type::kNumber;
      case ExprOp::kNot:
        RECUR_RETURN_IF_ERROR(expect(*e.lhs, Type::kTruth, "the operand of 'not'"));
        return Type::kTruth;
      case ExprOp::kAnd:
      case ExprOp::kOr: {
        std::string op(expr_op_symbol(e.op));
        RECUR_RETURN_IF_ERROR(expect(*e.lhs, Type::kTruth, fmt::format("the left side of '{}'", op)));
        RECUR_RETURN_IF_ERROR(expect(*e.rhs, Type::kTruth, fmt::format("the right side of '{}'", op)));
        return Type::kTruth;
      }
      default: {
        std::string op(expr_op_symbol(e.op));
        RECUR_RETURN_IF_ERROR(expect(*e.lhs, Type::kNumber, fmt::format("the left side of '{}'", op)));
        RECUR_RETURN_IF_ERROR(expect(*e.rhs, Type::kNumber, fmt::format("the right side of '{}'", op)));
        return is_comparison(e.op) ? Type::kTruth : Type::kNumber;
      }
    }
  }
};

}  // namespace

std::span<const MetricDef> metric_catalogue() { return kMetrics; }

const MetricDef* find_metric_def(std::string_view name) {
  for (const MetricDef& d : kMetrics)
    if (d.name == name) return &d;
  return nullptr;
}

std::string MetricRequest::key() const {
  std::string k = fmt::format("{}({}", def ? def->name : "?", arm);
  if (!vs.empty()) k += " vs " + vs;
  if (!detail.empty()) k += fmt::format(", \"{}\"", detail);
  return k + ")";
}

MetricRequest request_for_call(const Expr& call) {
  MetricRequest r;
  r.def = find_metric_def(call.name);
  for (const CallArg& a : call.args) {
    if (a.is_string) r.detail = a.text;
    else if (r.arm.empty()) r.arm = a.text;
    else r.vs = a.text;
  }
  return r;
}

Status check_condition(const Expr& e, std::string_view text, const ExprSource& source, const ConditionContext& ctx,
                       std::vector<MetricRequest>& requests) {
  Checker c{text, source, ctx, requests};
  RECUR_ASSIGN_OR_RETURN(Type t, c.visit(e));
  if (t != Type::kTruth)
    return c.fail(e.offset, "a condition must be a truth value: a comparison (>=, <=, ...) or a truth metric "
                            "such as tokens_equal(a, b); this is a number");
  return ok_status();
}

}  // namespace recur::gate
