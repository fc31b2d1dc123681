// `recur engine bench`: prefill and decode tokens/s of a model, with the bandwidth roofline,
// as a tier-3 probe (Feedback-shaped JSON with --json).
// `recur engine ops-diff`: two configurations compared op by op (gate/op_errors.h).
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "core/thread_pool.h"
#include "engine/engine_bench.h"
#include "engine/model.h"
#include "engine/model_cache.h"
#include "gate/op_errors.h"
#include "probe/sysinfo.h"
#include "probe/sysinfo_conditions.h"

namespace recur::cli {
namespace {

struct EngineBenchFlags {
  std::string model;
  EngineBenchOptions options;
  int threads = 0;
  bool json = false;
};

// `first` (when not empty), then `rest`.
std::vector<std::string> notes_with(std::string first, std::string rest) {
  std::vector<std::string> out;
  if (!first.empty()) out.push_back(std::move(first));
  out.push_back(std::move(rest));
  return out;
}

int run_engine_bench(const EngineBenchFlags& f) {
  // No -m: the embedded default, as generate and serve use.
  auto path = f.model.empty() || f.model == "default" ? default_model_path() : Result<std::string>(f.model);
  if (!path) return report_failure(path.error());
  auto model = load_model(*path, global_config());
  if (!model) return report_failure(model.error());
  auto pool_options = engine_pool_options(global_config(), f.threads);
  if (!pool_options) return report_failure(pool_options.error());
  auto pool = ThreadPool::create(*pool_options);
  if (!pool) return report_failure(pool.error());
  auto r = bench_engine(**model, **pool, f.options, global_config());
  if (!r) return report_failure(r.error());
  const int threads = (*pool)->size();
  auto roofline = machine_roofline();
  double bandwidth = 0;
  if (roofline) bandwidth = threads > 1 ? roofline->read_bw_all.median : roofline->read_bw_1t.median;
  // Weights are streamed once per decode step, which carries `batch` tokens.
  const double gbs = r->median_decode() / f.options.batch * r->weight_bytes_per_token / 1e9;
  const double frac = bandwidth > 0 ? gbs / bandwidth : 0;
  auto minmax = [](const std::vector<double>& v) {
    return std::pair(*std::min_element(v.begin(), v.end()), *std::max_element(v.begin(), v.end()));
  };
  auto [pmin, pmax] = minmax(r->prefill_tok_s);
  auto [dmin, dmax] = minmax(r->decode_tok_s);
  if (f.json) {
    nlohmann::json j = {
        {"probe", "bench.engine"},
        {"tier", 3},
        {"subject", fmt::format("engine:{} model={} threads={}", arch_name((*model)->config().arch), f.model, threads)},
        {"verdict", "confirmed"},
        {"metrics",
         {{{"name", "prefill_tok_s"}, {"value", r->median_prefill()}, {"range", {pmin, pmax}}, {"unit", "tok/s"}},
          {{"name", "decode_tok_s"}, {"value", r->median_decode()}, {"range", {dmin, dmax}}, {"unit", "tok/s"}},
          {{"name", "decode_weight_gb_s"}, {"value", gbs}, {"unit", "GB/s"}},
          {{"name", "bandwidth_frac"}, {"value", frac}}}},
        {"notes", notes_with(suspect_fraction_note("read bandwidth", frac), fmt::format("{} runs after {} warm-up; batch {}; prefill {} tokens, decode {} tokens; {:.1f} MB of weights per "
                               "decoded token; roofline {:.1f} GB/s ({} threads)",
                               f.options.runs, f.options.warmup_runs, f.options.batch, f.options.prefill_tokens, f.options.decode_tokens,
                               r->weight_bytes_per_token / 1e6, bandwidth, threads))},
        {"artifacts", nlohmann::json::object()}};
    print_json(j);
    return kExitOk;
  }
  fmt::print("model     {} ({}, {} threads)\n", f.model, arch_name((*model)->config().arch), threads);
  fmt::print("prefill   {:8.1f} tok/s  [{:.1f} .. {:.1f}]  ({} tokens, {} runs)\n", r->median_prefill(), pmin, pmax,
             f.options.prefill_tokens, f.options.runs);
  fmt::print("decode    {:8.1f} tok/s  [{:.1f} .. {:.1f}]  ({} tokens, {} runs, batch {})\n", r->median_decode(), dmin,
             dmax, f.options.decode_tokens, f.options.runs, f.options.batch);
  fmt::print("roofline  {:.1f} MB/token -> {:.1f} GB/s = {:.0f}% of the measured {:.1f} GB/s\n",
             r->weight_bytes_per_token / 1e6, gbs, 100 * frac, bandwidth);
  if (std::string n = suspect_fraction_note("read bandwidth", frac); !n.empty()) fmt::print("          {}\n", n);
  return kExitOk;
}

struct OpsDiffFlags {
  std::string model = "default";
  std::vector<std::string> a_knobs, b_knobs;
  gate::OpErrorOptions options;
  int threads = 1;
  bool json = false;
};

int run_ops_diff(const OpsDiffFlags& f) {
  auto path = f.model == "default" ? default_model_path() : Result<std::string>(f.model);
  if (!path) return report_failure(path.error());
  auto model = load_model(*path);
  if (!model) return report_failure(model.error());
  auto pool = ThreadPool::create({.threads = f.threads, .pin = false});
  if (!pool) return report_failure(pool.error());
  gate::NamedConfig a{"a", global_config()}, b{"b", global_config()};
  for (auto [arm, knobs] : {std::pair(&a, &f.a_knobs), std::pair(&b, &f.b_knobs)})
    for (const std::string& k : *knobs)
      if (auto st = arm->config.set_assignment(k); !st) return report_failure(st.error().with_context("--" + arm->name));
  auto r = gate::measure_op_errors(**model, *path, **pool, f.options, a, b);
  if (!r) return report_failure(r.error());
  if (f.json) {
    print_json(feedback_to_json(r->feedback));
    return kExitOk;
  }
  fmt::print("{:<28} {:<18} {:>12} {:>12}\n", "op", "component", "max_rel_err", "added");
  for (const gate::OpError& e : r->ops)
    fmt::print("{:<28} {:<18} {:>12.3e} {:>12.3e}{}\n", e.name, e.component, e.max_rel_err, e.added,
               e.name == r->first_over ? "  <- first over tolerance" : "");
  fmt::print("\n{}", render_feedback(r->feedback));
  return kExitOk;
}

void register_ops_diff(CLI::App* engine, Invocation& inv) {
  auto f = std::make_shared<OpsDiffFlags>();
  auto* c = engine->add_subcommand(
      "ops-diff", "Compare two configurations op by op: arm b generates greedy tokens, both arms are fed them, and "
                  "every op's output (projections, KDA/attention cores, all-reduces, norms, LM head) is compared; "
                  "prints each op's max relative error, the first op over the tolerance and which components add "
                  "the error (hybrid models)");
  c->add_option("-m,--model", f->model, "GGUF model file, or 'default'")->capture_default_str();
  c->add_option("--a", f->a_knobs, "knob=value for arm a (repeatable; --set applies to both arms)");
  c->add_option("--b", f->b_knobs, "knob=value for arm b, the reference (repeatable)");
  c->add_option("-p,--prompt", f->options.prompts, "prompt (repeatable)")->capture_default_str();
  c->add_option("--tokens", f->options.decode_tokens, "greedy tokens per prompt")->check(CLI::Range(1, 4096))->capture_default_str();
  c->add_option("--tolerance", f->options.tolerance, "an op is over when its max relative error exceeds this")
      ->check(CLI::PositiveNumber)->capture_default_str();
  c->add_option("--threads", f->threads, "threads of the engine pool (TP ranks are their own)")->check(CLI::Range(1, 1024))->capture_default_str();
  c->add_flag("--json", f->json, "Print the Feedback record (JSON)");
  c->callback([&inv, f] { inv.run = [f] { return run_ops_diff(*f); }; });
}

void register_engine(CLI::App& app, Invocation& inv) {
  auto* engine = app.add_subcommand("engine", "Engine probes: throughput of a model, op-by-op comparison of two configurations");
  engine->require_subcommand(1);
  auto f = std::make_shared<EngineBenchFlags>();
  auto* bench = engine->add_subcommand("bench", "Prefill and decode tokens/s of a GGUF model over fresh sessions, "
                                                "medians over runs, with the decode bandwidth roofline");
  bench->add_option("-m,--model", f->model, "GGUF model file or Hugging Face checkpoint directory (default: the embedded default model, as generate uses)");
  bench->add_option("--prefill", f->options.prefill_tokens, "prompt tokens")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  bench->add_option("--decode", f->options.decode_tokens, "decoded tokens")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  bench->add_option("--runs", f->options.runs, "timed runs")->check(CLI::Range(1, 1000))->capture_default_str();
  bench->add_option("--batch", f->options.batch, "sequences decoded together (aggregate tok/s)")->check(CLI::Range(1, 1024))->capture_default_str();
  bench->add_option("--warmup", f->options.warmup_runs, "untimed runs first")->check(CLI::Range(0, 100))->capture_default_str();
  bench->add_option("--threads", f->threads, "threads (0 = every CPU)")->check(CLI::Range(0, 1024))->capture_default_str();
  bench->add_flag("--json", f->json, "Print a Feedback record (JSON)");
  bench->callback([&inv, f] { inv.run = [f] { return run_engine_bench(*f); }; });
  register_ops_diff(engine, inv);
}

}  // namespace

RECUR_CLI_COMMAND(engine, register_engine);

}  // namespace recur::cli
