// The metrics a gate condition can call, the probe that measures each, and the checks that a
// condition uses them correctly (known metric, known arms, right number of arms, numbers where
// numbers are expected and truth values where truth values are) before anything runs.
// Pure functions over a static table; thread-safe.
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "gate/expr.h"

namespace recur::gate {

// Which measurement produces a metric; one probe run can answer several metrics.
enum class MetricSource {
  kEngineThroughput,  // bench.engine: prefill/decode tok/s per arm, repeated runs, median + CI
  kEnginePair,        // greedy generation of one arm, the other teacher-forced on its tokens
  kEngineOps,         // the same forced pass, compared op by op (check.engine_ops, gate/op_errors.h)
  kKernelTime,        // bench.kernel: one arm timed alone
  kKernelRatio,       // bench.kernel: one arm against another, interleaved, ratio with CI
  kKernelCheck,       // check.kernel: an arm against the float64 reference (and another arm)
  kTraceZone,         // zone time from a trace (declared; needs src/analyze)
};

struct MetricDef {
  std::string_view name;
  MetricSource source;
  int min_arms = 1, max_arms = 1;  // arms in the call: f(a) or f(a vs b)
  int strings = 0;                 // quoted arguments after the arms (a zone name)
  bool boolean = false;            // a truth value (1 = holds) rather than a number
  std::string_view unit;
  std::string_view probe;          // the probe named in Feedback ("bench.engine")
  int tier = 0;
  bool implemented = true;
  std::string_view help;
};

std::span<const MetricDef> metric_catalogue();
const MetricDef* find_metric_def(std::string_view name);

// One value a gate needs: metric(arm) or metric(arm vs other).
struct MetricRequest {
  const MetricDef* def = nullptr;
  std::string arm;
  std::string vs;      // "" for one-arm calls
  std::string detail;  // the string argument, if any
  // "prefill_tok_s(candidate)", "logits_max_rel_err(tp4 vs tp1)": the key in results.
  std::string key() const;
  bool operator==(const MetricRequest& o) const { return key() == o.key(); }
};

// The request a (checked) call expression makes.
MetricRequest request_for_call(const Expr& call);

// What the spec offers a condition: its arms and which workloads it declares.
struct ConditionContext {
  std::vector<std::string> arms;
  bool has_engine = false;
  bool has_kernel = false;
  bool has_program = false;  // [workload.program]: throughput metrics come from the program
};

// Checks names, arity and types of a parsed condition (which must be a truth value) and appends
// the metric requests it makes to `requests` (without duplicates). Errors point into `text`.
Status check_condition(const Expr& e, std::string_view text, const ExprSource& source, const ConditionContext& ctx,
                       std::vector<MetricRequest>& requests);

}  // namespace recur::gate
