// `recur loadgen`: drive an OpenAI-compatible server and report throughput, TTFT and ITL.
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli/cli.h"
#include "serve/loadgen.h"

namespace recur::cli {
namespace {

struct LoadgenFlags {
  serve::LoadgenOptions options;
  bool json = false;
};

int run_loadgen(const LoadgenFlags& f) {
  auto report = serve::run_loadgen(f.options);
  if (!report) return report_failure(report.error());
  if (f.json)
    print_json(serve::report_json(*report));
  else
    fmt::print("{}", serve::report_table(*report));
  return report->failed == 0 ? kExitOk : kExitFailure;
}

void register_loadgen(CLI::App& app, Invocation& inv) {
  auto f = std::make_shared<LoadgenFlags>();
  serve::LoadgenOptions& o = f->options;
  auto* cmd = app.add_subcommand("loadgen", "Send completions to an OpenAI-compatible server (recur serve, llama-server, "
                                            "vLLM) from N concurrent clients; report throughput, TTFT and inter-token "
                                            "latency percentiles. Exits 1 if any request failed.");
  cmd->add_option("--url", o.url, "server base URL, http://HOST:PORT")->capture_default_str();
  cmd->add_option("--concurrency", o.concurrency, "concurrent clients")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--requests", o.requests, "requests in total")->check(CLI::Range(1, 1 << 24))->capture_default_str();
  cmd->add_option("--duration-s", o.duration_s, "send for this many seconds instead of --requests (0 = off)")
      ->check(CLI::Range(0.0, 1e7))->capture_default_str();
  cmd->add_option("--input-len", o.input_len, "prompt tokens (random ids)")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--output-len", o.output_len, "tokens generated per request (ignore_eos)")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--model", o.model, "model id (default: the first of /v1/models)");
  cmd->add_option("--api-key", o.api_key, "sent as 'Authorization: Bearer KEY'");
  cmd->add_option("--seed", o.seed, "seed of the prompt token ids")->capture_default_str();
  cmd->add_flag("--stream", o.stream, "stream responses (needed for TTFT and ITL)");
  cmd->add_flag("--json", f->json, "print one JSON object instead of the table");
  cmd->callback([&inv, f] { inv.run = [f] { return run_loadgen(*f); }; });
}

}  // namespace

RECUR_CLI_COMMAND(loadgen, register_loadgen);

}  // namespace recur::cli
