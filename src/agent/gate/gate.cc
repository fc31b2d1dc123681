// run_gate(): measure what the conditions call, cheapest probes first, then evaluate.
#include "gate/gate.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/clock.h"
#include "core/thread_pool.h"
#include "engine/model.h"
#include "gate/arm_engines.h"
#include "gate/engine_probe.h"
#include "gate/kernel_probe.h"
#include "gate/op_errors.h"
#include "gate/program_probe.h"
#include "gate/zone_probe.h"

namespace recur::gate {

namespace {

// The measurements a spec needs, grouped by the probe call that answers them.
struct Plan {
  std::vector<std::pair<std::string, std::string>> checks;   // (a, b or "")
  std::vector<std::string> kernel_times;                     // arms
  std::vector<std::pair<std::string, std::string>> ratios;   // (a, b)
  std::vector<std::pair<std::string, std::string>> agreements;
  std::vector<std::pair<std::string, std::string>> op_pairs;  // one op-by-op pass per (a, b)
  std::vector<std::string> throughput;                       // arms, in spec order
  std::vector<std::pair<std::string, std::string>> throughput_pairs;  // paired ratios (a, b)
  std::vector<std::pair<std::string, std::string>> zones;  // (arm, selector)
};

template <typename T>
void add_unique(std::vector<T>& v, T x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(std::move(x));
}

Plan make_plan(const GateSpec& spec) {
  Plan p;
  for (const MetricRequest& r : spec.requests) {
    switch (r.def->source) {
      case MetricSource::kKernelCheck: add_unique(p.checks, std::pair(r.arm, r.vs)); break;
      case MetricSource::kKernelTime: add_unique(p.kernel_times, r.arm); break;
      case MetricSource::kKernelRatio: add_unique(p.ratios, std::pair(r.arm, r.vs)); break;
      case MetricSource::kEnginePair: add_unique(p.agreements, std::pair(r.arm, r.vs)); break;
      case MetricSource::kEngineOps: add_unique(p.op_pairs, std::pair(r.arm, r.vs)); break;
      case MetricSource::kEngineThroughput:
        add_unique(p.throughput, r.arm);
        if (!r.vs.empty()) {
          add_unique(p.throughput, r.vs);
          add_unique(p.throughput_pairs, std::pair(r.arm, r.vs));
        }
        break;
      case MetricSource::kTraceZone: add_unique(p.zones, std::pair(r.arm, r.detail)); break;
    }
  }
  std::vector<std::string> ordered;
  for (const Arm& a : spec.arms)
    if (std::find(p.throughput.begin(), p.throughput.end(), a.name) != p.throughput.end()) ordered.push_back(a.name);
  p.throughput = ordered;
  return p;
}

std::string call_key(std::string_view metric, std::string_view a, std::string_view b = "") {
  MetricRequest r{find_metric_def(metric), std::string(a), std::string(b), ""};
  return r.key();
}

MetricValue point(double v, bool boolean = false, std::string unit = "") {
  return MetricValue{Interval::point(v), boolean, std::move(unit)};
}

class Runner {
 public:
  Runner(const GateSpec& spec, const GateRunOptions& options) : spec_(spec), options_(options), t0_(now_ns()) {}

  Result<GateResult> run() {
    for (const Arm& a : spec_.arms) {
      RECUR_ASSIGN_OR_RETURN(Config c, arm_config(spec_, a, options_.base));
      if (a.name == options_.track_reads_of) reads_ = c.track_reads();
      configs_.emplace(a.name, std::move(c));
    }
    const Plan plan = make_plan(spec_);
    KernelProbeOptions kopt{options_.peaks};
    // Tier 1: kernel checks.
    for (const auto& [a, b] : plan.checks) {
      say(fmt::format("check.kernel {}{}", a, b.empty() ? "" : " vs " + b));
      RECUR_ASSIGN_OR_RETURN(auto m, measure_kernel_check(arm_kernel_workload(spec_, a), configs_.at(a),
                                                          b.empty() ? nullptr : &configs_.at(b), kopt));
      values_[call_key("max_rel_err", a, b)] = point(m.max_rel_err);
      values_[call_key("max_abs_err", a, b)] = point(m.max_abs_err);
      values_[call_key("check_pass", a, b)] = point(m.pass ? 1 : 0, true);
      probes_.push_back(std::move(m.feedback));
    }
    if (stop()) return finish();
    // Tier 2: kernel timings.
    for (const std::string& a : plan.kernel_times) {
      say(fmt::format("bench.kernel {} ({:.1f} s budget)", a, spec_.kernel->budget_s));
      RECUR_ASSIGN_OR_RETURN(auto m, measure_kernel_time(arm_kernel_workload(spec_, a), configs_.at(a), kopt));
      values_[call_key("time_us", a)] = m.value;
      probes_.push_back(std::move(m.feedback));
    }
    for (const auto& [a, b] : plan.ratios) {
      say(fmt::format("bench.kernel {} vs {} ({:.1f} s budget)", a, b, spec_.kernel->budget_s));
      RECUR_ASSIGN_OR_RETURN(auto m, measure_kernel_ratio(arm_kernel_workload(spec_, a), configs_.at(a),
                                                          arm_kernel_workload(spec_, b), configs_.at(b), kopt));
      values_[call_key("time_ratio", a, b)] = m.value;
      MetricValue inv = m.value;
      inv.value = Interval::point(1) / m.value.value;
      values_[call_key("speedup", a, b)] = inv;
      probes_.push_back(std::move(m.feedback));
    }
    if (stop()) return finish();
    // Tier 3: the engine; agreement (one pass per pair) before throughput (many runs).
    const bool engine_throughput = !plan.throughput.empty() && spec_.engine;
    if (!plan.agreements.empty() || !plan.op_pairs.empty() || engine_throughput || !plan.zones.empty()) {
      RECUR_RETURN_IF_ERROR(load_engine());
      for (const auto& [a, b] : plan.agreements) {
        say(fmt::format("check.engine {} vs {}", a, b));
        RECUR_ASSIGN_OR_RETURN(EngineArm ea, engine_arm(a));
        RECUR_ASSIGN_OR_RETURN(EngineArm eb, engine_arm(b));
        auto m = measure_agreement(engines_->model_path(), *spec_.engine, ea, eb);
        if (!m) return unexpected(m.error().with_context(spec_.path.empty() ? "gate" : spec_.path));
        values_[call_key("tokens_equal", a, b)] = point(m->tokens_equal ? 1 : 0, true);
        values_[call_key("token_match_frac", a, b)] = point(m->token_match_frac);
        values_[call_key("logits_max_abs_err", a, b)] = point(m->max_abs_err);
        values_[call_key("logits_max_rel_err", a, b)] = point(m->max_rel_err);
        probes_.push_back(std::move(m->feedback));
      }
      for (const auto& [a, b] : plan.op_pairs) RECUR_RETURN_IF_ERROR(measure_ops(a, b));
      if (stop()) return finish();
      if (engine_throughput) RECUR_RETURN_IF_ERROR(measure_throughput_of(plan));
      for (const auto& [a, sel] : plan.zones) RECUR_RETURN_IF_ERROR(measure_zone(a, sel));
    }
    if (!plan.throughput.empty() && spec_.program) RECUR_RETURN_IF_ERROR(measure_throughput_of(plan));
    return finish();
  }

 private:
  double elapsed_s() const { return double(now_ns() - t0_) / 1e9; }

  void say(std::string_view what) const {
    if (options_.progress) options_.progress(fmt::format("[gate {} {:6.1f} s] {}", spec_.name, elapsed_s(), what));
  }

  // True when a condition already fails on the metrics measured so far.
  bool stop() const {
    if (!options_.stop_at_first_failure) return false;
    GateResult partial = evaluate_gate(spec_, values_, {}, 0);
    for (const ConditionResult& c : partial.verdict.conditions) {
      if (c.outcome == Outcome::kFail) {
        say(fmt::format("stopping: `{}` already fails", c.text));
        return true;
      }
    }
    return false;
  }

  // prefill/decode tok/s and paired ratios of the throughput arms, from the engine or the program.
  Status measure_throughput_of(const Plan& plan) {
    std::vector<NamedConfig> arms;
    std::vector<EngineArm> engine_arms;
    for (const std::string& a : plan.throughput) {
      arms.push_back({a, configs_.at(a)});
      if (spec_.program) continue;
      RECUR_ASSIGN_OR_RETURN(EngineArm e, engine_arm(a));
      engine_arms.push_back(std::move(e));
    }
    auto say_it = [this](std::string_view s) { say(s); };
    auto m = spec_.program ? measure_program_throughput(spec_, arms, say_it)
                           : measure_throughput(engines_->model_path(), *spec_.engine, engine_arms, say_it);
    if (!m) return unexpected(m.error().with_context(spec_.path.empty() ? "gate" : spec_.path));
    auto result_of = [&](const std::string& arm) -> const ThroughputResult& {
      return *std::find_if(m->begin(), m->end(), [&](const ThroughputResult& t) { return t.arm == arm; });
    };
    for (const auto& [a, b] : plan.throughput_pairs) {
      const ThroughputResult &ra = result_of(a), &rb = result_of(b);
      if (!ra.prefill_tok_s.empty() && !rb.prefill_tok_s.empty())
        values_[call_key("prefill_ratio", a, b)] = paired_ratio(ra, rb, false);
      if (!ra.decode_tok_s.empty() && !rb.decode_tok_s.empty())
        values_[call_key("decode_ratio", a, b)] = paired_ratio(ra, rb, true);
    }
    for (ThroughputResult& t : *m) {
      if (!t.prefill_tok_s.empty()) values_[call_key("prefill_tok_s", t.arm)] = t.prefill;
      if (!t.decode_tok_s.empty()) values_[call_key("decode_tok_s", t.arm)] = t.decode;
      probes_.push_back(std::move(t.feedback));
    }
    for (const MetricRequest& r : spec_.requests)
      if (r.def->source == MetricSource::kEngineThroughput && !values_.contains(r.key()))
        return invalid_argument("{}: {} asks for what [workload.program] did not print ({} of arm {})",
                                spec_.path.empty() ? "gate" : spec_.path, r.key(),
                                r.def->name.find("decode") == 0 ? "decode_tok_s" : "prefill_tok_s", r.arm);
    return ok_status();
  }

  // op_max_rel_err of every op the conditions name, from one op-by-op pass of a against b.
  Status measure_ops(const std::string& a, const std::string& b) {
    say(fmt::format("check.engine_ops {} vs {}", a, b));
    OpErrorOptions o{.prompts = spec_.engine->prompts, .decode_tokens = spec_.engine->decode_tokens};
    RECUR_ASSIGN_OR_RETURN(EngineArm ea, engine_arm(a));
    RECUR_ASSIGN_OR_RETURN(EngineArm eb, engine_arm(b));
    auto m = measure_op_errors(engines_->model_path(), o, ea, eb);
    if (!m) return unexpected(m.error().with_context(spec_.path.empty() ? "gate" : spec_.path));
    for (const MetricRequest& r : spec_.requests) {
      if (r.def->source != MetricSource::kEngineOps || r.arm != a || r.vs != b) continue;
      auto op = std::find_if(m->ops.begin(), m->ops.end(), [&](const OpError& e) { return e.name == r.detail; });
      if (op == m->ops.end())
        return not_found("{}: {} names no op of the forward pass (`recur engine ops-diff` lists them, e.g. {})",
                         spec_.path, r.key(), m->ops.empty() ? "none" : m->ops.back().name);
      values_[r.key()] = point(op->max_rel_err);
    }
    probes_.push_back(std::move(m->feedback));
    return ok_status();
  }

  Status measure_zone(const std::string& arm, const std::string& selector) {
    say(fmt::format("analyze.zone_time {} `{}` ({} runs, traced)", arm, selector, spec_.engine->runs));
    std::string trace_out;
    if (!options_.artifact_dir.empty()) {
      std::string safe = selector;
      for (char& c : safe)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
      trace_out = fmt::format("{}/{}-{}-{}.json.gz", options_.artifact_dir, spec_.name, arm, safe.substr(0, 40));
    }
    RECUR_ASSIGN_OR_RETURN(EngineArm e, engine_arm(arm));
    auto m = measure_zone_time(*e.model, *e.pool, *spec_.engine, e.arm, selector, trace_out);
    if (!m) return unexpected(m.error().with_context(spec_.path.empty() ? "gate" : spec_.path));
    MetricRequest r{find_metric_def("zone_time_us"), arm, "", selector};
    values_[r.key()] = m->value;
    probes_.push_back(std::move(m->feedback));
    return ok_status();
  }

  // Every arm's model instance and pool, loaded now (not between timed runs): arms that differ
  // in a load-time knob (engine.weight_layout, engine.pool_spin_us, ...) get their own, the
  // others share one. Each pool has the engine's own settings: a gate measures what `recur
  // generate` and `recur serve` run.
  Status load_engine() {
    RECUR_ASSIGN_OR_RETURN(std::string path, resolve_model_path(*spec_.engine));
    engines_.emplace(path, spec_.threads);
    for (const Arm& a : spec_.arms) {
      RECUR_ASSIGN_OR_RETURN(EngineArm e, engine_arm(a.name));
      (void)e;
    }
    say(fmt::format("loaded the model: {} instance(s) for {} arm(s)", engines_->instances(), spec_.arms.size()));
    return ok_status();
  }

  Result<EngineArm> engine_arm(const std::string& arm) {
    const Config& c = configs_.at(arm);
    auto e = engines_->get(c);
    if (!e) return unexpected(e.error().with_context(fmt::format("arm {}", arm)));
    return EngineArm{{arm, c}, e->model, e->pool};
  }

  Result<GateResult> finish() {
    GateResult r = evaluate_gate(spec_, std::move(values_), std::move(probes_), elapsed_s());
    if (engines_) {
      for (std::string& note : engines_->conditions_notes()) r.feedback.notes.push_back(std::move(note));
      if (engines_->instances() > 1)
        r.feedback.notes.push_back(fmt::format("{} model instances: arms differ in load-time knobs ({})",
                                               engines_->instances(), fmt::join(engines_->load_keys(), "; ")));
    }
    // A program workload reads its knobs in other processes, out of sight.
    if (reads_ && !spec_.program) r.knobs_read = reads_->names();
    say(fmt::format("verdict {}", outcome_name(r.verdict.outcome)));
    return r;
  }

  const GateSpec& spec_;
  const GateRunOptions& options_;
  int64_t t0_;
  std::map<std::string, Config> configs_;
  std::shared_ptr<const KnobReads> reads_;
  MetricValues values_;
  std::vector<Feedback> probes_;
  std::optional<ArmEngines> engines_;
};

}  // namespace

Result<GateResult> run_gate(const GateSpec& spec, const GateRunOptions& options) { return Runner(spec, options).run(); }

}  // namespace recur::gate
