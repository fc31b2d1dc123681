#include "gate/engine_probe.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/clock.h"
#include "core/thread_pool.h"
#include "engine/engine_bench.h"
#include "engine/model_cache.h"
#include "engine/sampler.h"
#include "probe/stats.h"

namespace recur::gate {

namespace {

MetricValue median_with_ci(const std::vector<double>& x, std::string unit) {
  MetricValue m;
  m.unit = std::move(unit);
  const double med = probe::median(x);
  auto [lo, hi] = probe::bootstrap_median_ci(x);
  m.value = {med, std::min(lo, med), std::max(hi, med)};
  return m;
}

void add_metric_value(Feedback& f, std::string name, const MetricValue& v) {
  Metric& m = f.add_metric(std::move(name), v.value.value, v.unit);
  if (!v.value.is_point()) m.ci95 = std::pair(v.value.lo, v.value.hi);
}

}  // namespace

void summarize_throughput(ThroughputResult& t, std::string probe, double cost_s, std::string subject,
                          std::string note) {
  Feedback& f = t.feedback;
  f.probe = std::move(probe);
  f.tier = 3;
  f.cost_s = cost_s;
  f.subject = std::move(subject);
  f.hypothesis = fmt::format("throughput of arm {}", t.arm);
  f.verdict = Verdict::kConfirmed;
  if (!t.prefill_tok_s.empty()) {
    t.prefill = median_with_ci(t.prefill_tok_s, "tok/s");
    add_metric_value(f, "prefill_tok_s", t.prefill);
  }
  if (!t.decode_tok_s.empty()) {
    t.decode = median_with_ci(t.decode_tok_s, "tok/s");
    add_metric_value(f, "decode_tok_s", t.decode);
  }
  f.notes.push_back(std::move(note));
}

std::string config_text(const Config& c) {
  std::string s;
  for (const auto& [k, v] : c.overrides()) s += fmt::format("{}{}={}", s.empty() ? "" : " ", k, v);
  return s.empty() ? "defaults" : s;
}

std::string pair_subject(const Model& model, std::string_view model_path, const NamedConfig& a, const NamedConfig& b) {
  return fmt::format("engine:{} model={} arm {} ({}) vs {} ({})", arch_name(model.config().arch), model_path, a.name,
                     config_text(a.config), b.name, config_text(b.config));
}

Result<std::string> resolve_model_path(const EngineWorkload& w) {
  if (w.model == "default") return default_model_path();
  if (w.model == "synthetic") {
    const SyntheticModel m = w.synthetic.value_or(SyntheticModel{});
    RECUR_ASSIGN_OR_RETURN(SyntheticModelOptions o, synthetic_options(m));
    return cached_synthetic_model(o, synthetic_model_name(m));
  }
  return w.model;
}

Result<std::vector<ThroughputResult>> measure_throughput(std::string_view model_path, const EngineWorkload& w,
                                                         const std::vector<EngineArm>& arms,
                                                         const Progress& progress) {
  std::vector<ThroughputResult> out(arms.size());
  const int64_t t0 = now_ns();
  EngineBenchOptions one{.prefill_tokens = w.prefill_tokens, .decode_tokens = w.decode_tokens, .runs = 1, .warmup_runs = 0};
  auto run = [&](const EngineArm& e) -> Result<EngineBenchResult> {
    auto res = bench_engine(*e.model, *e.pool, one, e.arm.config);
    if (!res) return unexpected(res.error().with_context(fmt::format("arm {}", e.arm.name)));
    return res;
  };
  // Warm-up: each arm once per warm-up run (untimed), so caches and page faults are behind us.
  for (int r = 0; r < w.warmup_runs; ++r)
    for (const EngineArm& e : arms) RECUR_RETURN_IF_ERROR(run(e));
  for (int r = 0; r < w.runs; ++r) {
    for (size_t i = 0; i < arms.size(); ++i) {
      const size_t a = r % 2 == 0 ? i : arms.size() - 1 - i;  // A B, B A, ...
      if (progress) progress(fmt::format("bench.engine sample {}/{} arm {}", r + 1, w.runs, arms[a].arm.name));
      double prefill = 0, decode = 0;  // the fastest of best_of runs: preemption only ever adds time
      for (int k = 0; k < w.best_of; ++k) {
        RECUR_ASSIGN_OR_RETURN(EngineBenchResult res, run(arms[a]));
        prefill = std::max(prefill, res.prefill_tok_s.at(0));
        decode = std::max(decode, res.decode_tok_s.at(0));
      }
      out[a].prefill_tok_s.push_back(prefill);
      out[a].decode_tok_s.push_back(decode);
    }
  }
  const double cost_s = double(now_ns() - t0) / 1e9;
  for (size_t a = 0; a < arms.size(); ++a) {
    const EngineArm& e = arms[a];
    out[a].arm = e.arm.name;
    summarize_throughput(
        out[a], "bench.engine", cost_s / double(arms.size()),
        fmt::format("engine:{} model={} arm={} ({}) threads={}", arch_name(e.model->config().arch), model_path,
                    e.arm.name, config_text(e.arm.config), e.pool->size()),
        fmt::format("{} samples, each the fastest of {} back-to-back runs, after {} warm-up run(s), interleaved with "
                    "{} other arm(s); prefill {} tokens, decode {} tokens; median with bootstrap 95% CI",
                    w.runs, w.best_of, w.warmup_runs, arms.size() - 1, w.prefill_tokens, w.decode_tokens));
  }
  return out;
}

MetricValue paired_ratio(const ThroughputResult& a, const ThroughputResult& b, bool decode) {
  const std::vector<double>& x = decode ? a.decode_tok_s : a.prefill_tok_s;
  const std::vector<double>& y = decode ? b.decode_tok_s : b.prefill_tok_s;
  std::vector<double> ratios;
  for (size_t r = 0; r < std::min(x.size(), y.size()); ++r) ratios.push_back(x[r] / y[r]);
  return median_with_ci(ratios, "");
}

namespace {

struct ReferenceRun {
  std::vector<TokenId> prompt;
  std::vector<TokenId> generated;
  std::vector<std::vector<float>> logits;  // the logits that produced generated[i]
};

Result<ReferenceRun> greedy_run(const Model& model, ThreadPool& pool, const std::string& prompt, int tokens,
                                const Config& knobs) {
  const Tokenizer& tok = model.tokenizer();
  ReferenceRun r;
  r.prompt = tok.encode(prompt, tok.vocabulary().add_bos);
  if (r.prompt.empty()) r.prompt.push_back(tok.vocabulary().bos >= 0 ? tok.vocabulary().bos : 0);
  const int capacity = int(r.prompt.size()) + tokens;
  if (capacity > model.config().context)
    return invalid_argument("prompt of {} tokens plus {} generated exceeds the model's context of {}", r.prompt.size(),
                            tokens, model.config().context);
  RECUR_ASSIGN_OR_RETURN(auto session, model.new_session(pool, capacity, knobs));
  std::span<const float> logits;
  for (TokenId id : r.prompt) {
    RECUR_ASSIGN_OR_RETURN(logits, session->step(id));
  }
  for (int i = 0; i < tokens; ++i) {
    r.logits.emplace_back(logits.begin(), logits.end());
    r.generated.push_back(argmax(logits));
    if (i + 1 < tokens) {
      RECUR_ASSIGN_OR_RETURN(logits, session->step(r.generated.back()));
    }
  }
  return r;
}

}  // namespace

Result<AgreementResult> measure_agreement(std::string_view model_path, const EngineWorkload& w, const EngineArm& ea,
                                          const EngineArm& eb) {
  const NamedConfig &a = ea.arm, &b = eb.arm;
  const Model& model = *ea.model;
  const int64_t t0 = now_ns();
  AgreementResult out;
  int matches = 0;
  std::string first_divergence, worst_where;
  for (size_t p = 0; p < w.prompts.size(); ++p) {
    auto ref = greedy_run(*eb.model, *eb.pool, w.prompts[p], w.decode_tokens, b.config);
    if (!ref) return unexpected(ref.error().with_context(fmt::format("arm {}, prompt {}", b.name, p + 1)));
    auto session = model.new_session(*ea.pool, int(ref->prompt.size()) + w.decode_tokens, a.config);
    if (!session) return unexpected(session.error().with_context(fmt::format("arm {}", a.name)));
    std::span<const float> logits;
    for (TokenId id : ref->prompt) {
      auto l = (*session)->step(id);
      if (!l) return unexpected(l.error().with_context(fmt::format("arm {}, prompt {}", a.name, p + 1)));
      logits = *l;
    }
    for (int i = 0; i < w.decode_tokens; ++i) {
      const std::vector<float>& want = ref->logits[size_t(i)];
      double max_abs = 0, scale = 0;
      for (size_t v = 0; v < want.size(); ++v) {
        max_abs = std::max(max_abs, std::fabs(double(logits[v]) - double(want[v])));
        scale = std::max(scale, std::fabs(double(want[v])));
      }
      if (!std::isfinite(max_abs)) max_abs = std::numeric_limits<double>::infinity();
      const double rel = scale > 0 ? max_abs / scale : (max_abs > 0 ? std::numeric_limits<double>::infinity() : 0);
      if (max_abs > out.max_abs_err) out.max_abs_err = max_abs;
      if (rel > out.max_rel_err) {
        out.max_rel_err = rel;
        worst_where = fmt::format("prompt {}, generated position {}", p + 1, i);
      }
      const TokenId got = argmax(logits), expected = ref->generated[size_t(i)];
      if (got == expected) {
        ++matches;
      } else if (first_divergence.empty()) {
        const Tokenizer& tok = model.tokenizer();
        first_divergence = fmt::format("first divergence: prompt {}, generated position {}: {} predicts {} ({:?}), {} "
                                       "generated {} ({:?})",
                                       p + 1, i, a.name, got, tok.piece(got), b.name, expected, tok.piece(expected));
      }
      ++out.positions;
      if (i + 1 < w.decode_tokens) {
        auto l = (*session)->step(expected);
        if (!l) return unexpected(l.error().with_context(fmt::format("arm {}, prompt {}", a.name, p + 1)));
        logits = *l;
      }
    }
  }
  out.tokens_equal = out.positions == matches;
  out.token_match_frac = out.positions ? double(matches) / out.positions : 1;
  Feedback& f = out.feedback;
  f.probe = "check.engine";
  f.tier = 3;
  f.cost_s = double(now_ns() - t0) / 1e9;
  f.subject = pair_subject(model, model_path, a, b);
  f.hypothesis = fmt::format("{} generates the same greedy tokens as {}", a.name, b.name);
  f.verdict = out.tokens_equal ? Verdict::kConfirmed : Verdict::kRefuted;
  f.add_metric("tokens_equal", out.tokens_equal ? 1 : 0);
  f.add_metric("token_match_frac", out.token_match_frac);
  // JSON has no infinity; a non-finite error is reported as the largest double and noted.
  auto finite = [](double x) { return std::isfinite(x) ? x : std::numeric_limits<double>::max(); };
  f.add_metric("logits_max_abs_err", finite(out.max_abs_err));
  f.add_metric("logits_max_rel_err", finite(out.max_rel_err));
  if (!std::isfinite(out.max_abs_err)) f.notes.push_back("non-finite logits in " + a.name);
  f.notes.push_back(fmt::format("{} prompt(s) x {} greedy tokens of {}; {} fed the same tokens; {} of {} positions "
                                "agree",
                                w.prompts.size(), w.decode_tokens, b.name, a.name, matches, out.positions));
  if (!first_divergence.empty()) f.notes.push_back(first_divergence);
  if (!worst_where.empty()) f.notes.push_back(fmt::format("largest relative logit error at {}", worst_where));
  return out;
}

}  // namespace recur::gate
