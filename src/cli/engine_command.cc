// `recur engine bench`: prefill and decode tokens/s of a model, with the bandwidth roofline,
// as a tier-3 probe (Feedback-shaped JSON with --json).
#include <cstdio>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "core/thread_pool.h"
#include "engine/engine_bench.h"
#include "engine/model.h"
#include "probe/sysinfo.h"

namespace recur::cli {
namespace {

struct EngineBenchFlags {
  std::string model;
  EngineBenchOptions options;
  int threads = 0;
  bool json = false;
};

int run_engine_bench(const EngineBenchFlags& f) {
  auto model = load_model(f.model);
  if (!model) return report_failure(model.error());
  auto pool = ThreadPool::create({.threads = f.threads, .pin = true});
  if (!pool) return report_failure(pool.error());
  auto r = bench_engine(**model, **pool, f.options, global_config());
  if (!r) return report_failure(r.error());
  const int threads = (*pool)->size();
  auto roofline = machine_roofline();
  double bandwidth = 0;
  if (roofline) bandwidth = threads > 1 ? roofline->read_bw_all.median : roofline->read_bw_1t.median;
  const double gbs = r->median_decode() * r->weight_bytes_per_token / 1e9;
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
        {"notes", {fmt::format("{} runs after {} warm-up; prefill {} tokens, decode {} tokens; {:.1f} MB of weights per "
                               "decoded token; roofline {:.1f} GB/s ({} threads)",
                               f.options.runs, f.options.warmup_runs, f.options.prefill_tokens, f.options.decode_tokens,
                               r->weight_bytes_per_token / 1e6, bandwidth, threads)}},
        {"artifacts", nlohmann::json::object()}};
    print_json(j);
    return kExitOk;
  }
  fmt::print("model     {} ({}, {} threads)\n", f.model, arch_name((*model)->config().arch), threads);
  fmt::print("prefill   {:8.1f} tok/s  [{:.1f} .. {:.1f}]  ({} tokens, {} runs)\n", r->median_prefill(), pmin, pmax,
             f.options.prefill_tokens, f.options.runs);
  fmt::print("decode    {:8.1f} tok/s  [{:.1f} .. {:.1f}]  ({} tokens, {} runs)\n", r->median_decode(), dmin, dmax,
             f.options.decode_tokens, f.options.runs);
  fmt::print("roofline  {:.1f} MB/token -> {:.1f} GB/s = {:.0f}% of the measured {:.1f} GB/s\n",
             r->weight_bytes_per_token / 1e6, gbs, 100 * frac, bandwidth);
  return kExitOk;
}

void register_engine(CLI::App& app, Invocation& inv) {
  auto* engine = app.add_subcommand("engine", "Engine probes: throughput of a model");
  engine->require_subcommand(1);
  auto f = std::make_shared<EngineBenchFlags>();
  auto* bench = engine->add_subcommand("bench", "Prefill and decode tokens/s of a GGUF model over fresh sessions, "
                                                "medians over runs, with the decode bandwidth roofline");
  bench->add_option("-m,--model", f->model, "GGUF model file")->required();
  bench->add_option("--prefill", f->options.prefill_tokens, "prompt tokens")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  bench->add_option("--decode", f->options.decode_tokens, "decoded tokens")->check(CLI::Range(1, 1 << 16))->capture_default_str();
  bench->add_option("--runs", f->options.runs, "timed runs")->check(CLI::Range(1, 1000))->capture_default_str();
  bench->add_option("--warmup", f->options.warmup_runs, "untimed runs first")->check(CLI::Range(0, 100))->capture_default_str();
  bench->add_option("--threads", f->threads, "threads (0 = every CPU)")->check(CLI::Range(0, 1024))->capture_default_str();
  bench->add_flag("--json", f->json, "Print a Feedback record (JSON)");
  bench->callback([&inv, f] { inv.run = [f] { return run_engine_bench(*f); }; });
}

}  // namespace

RECUR_CLI_COMMAND(engine, register_engine);

}  // namespace recur::cli
