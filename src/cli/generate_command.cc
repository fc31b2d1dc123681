// `recur generate`: run a model on a prompt, stream tokens to stdout, report tok/s on stderr.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/cli.h"
#include "core/thread_pool.h"
#include "engine/generate.h"
#include "engine/model.h"
#include "engine/model_cache.h"
#include "trace/trace.h"
#include "trace/trace_io.h"

namespace recur::cli {
namespace {

struct GenerateFlags {
  std::string model;
  std::string prompt = "Once upon a time";
  int tokens = 32;
  float temperature = 0.0f;
  float top_p = 0.95f;
  uint64_t seed = 0;
  int threads = 0;
  bool json = false;
  std::string trace;
};

int run_generate(const GenerateFlags& f) {
  // The trace is written after generating: a path that cannot be written is refused first.
  if (!f.trace.empty()) {
    const std::filesystem::path dir = std::filesystem::absolute(f.trace).parent_path();
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec) || access(dir.c_str(), W_OK) != 0) {
      std::fprintf(stderr, "recur: generate: --trace %s: the folder %s does not exist or is not writable\n",
                   f.trace.c_str(), dir.c_str());
      return kExitUsage;
    }
  }
  std::string path = f.model;
  if (path.empty()) {
    auto d = default_model_path();
    if (!d) return report_failure(d.error());
    path = *d;
    fmt::print(stderr, "recur: no -m: the embedded default model ({}), a synthetic model with RANDOM weights: the "
                       "text is meaningless (it exercises the engine); pass -m with a real GGUF model for text\n",
               path);
  }
  auto model = load_model(path, global_config());
  if (!model) return report_failure(model.error());
  auto pool_options = engine_pool_options(global_config(), f.threads);
  if (!pool_options) return report_failure(pool_options.error());
  auto pool = ThreadPool::create(*pool_options);
  if (!pool) return report_failure(pool.error());
  GenerateOptions o;
  o.max_new_tokens = f.tokens;
  o.sampling = {f.temperature, f.top_p, f.seed};
  if (!f.trace.empty()) trace::set_enabled(true);
  std::string text;
  auto stats = generate(**model, **pool, f.prompt, o, [&](std::string_view piece) {
    text += piece;
    if (!f.json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  }, global_config());
  if (!f.trace.empty()) {
    trace::set_enabled(false);
    trace::EventTable table = trace::capture();
    if (auto s = trace::write_trace(table, f.trace); !s) return report_failure(s.error());
    fmt::print(stderr, "trace: {} events on {} tracks ({} dropped) in {}\n", table.size(), table.tracks().size(),
               table.info().dropped_events, f.trace);
  }
  if (!stats) return report_failure(stats.error());
  if (f.json) {
    // The prompt's ids as generate() encoded them, to compare tokenizers with other engines.
    const Tokenizer& tok = (*model)->tokenizer();
    nlohmann::json j = {{"model", path}, {"prompt", f.prompt}, {"text", text}, {"tokens", stats->tokens},
                        {"prompt_ids", tok.encode(f.prompt, tok.vocabulary().add_bos)},
                        {"prompt_tokens", stats->prompt_tokens}, {"generated_tokens", stats->generated_tokens},
                        {"prefill_tok_s", stats->prefill_tok_s()}, {"decode_tok_s", stats->decode_tok_s()},
                        {"threads", (*pool)->size()}};
    print_json(j);
  } else {
    std::fputc('\n', stdout);
  }
  fmt::print(stderr, "prefill {} tokens: {:.1f} tok/s; decode {} tokens: {:.1f} tok/s ({} threads)\n",
             stats->prompt_tokens, stats->prefill_tok_s(), stats->generated_tokens, stats->decode_tok_s(), (*pool)->size());
  return kExitOk;
}

void register_generate(CLI::App& app, Invocation& inv) {
  auto f = std::make_shared<GenerateFlags>();
  auto* cmd = app.add_subcommand("generate", "Generate text with a GGUF model (any architecture recur runs: `recur model new --help` lists them under --arch). Tokens stream to "
                                             "stdout; prefill and decode tokens/s go to stderr. Without -m, a small "
                                             "synthetic model is written once into ~/.cache/recur/models/ and used.");
  cmd->add_option("-m,--model", f->model, "GGUF model file, or a Hugging Face checkpoint directory (config.json, safetensors, tokenizer.json)");
  cmd->add_option("-p,--prompt", f->prompt, "prompt text")->capture_default_str();
  cmd->add_option("-n,--tokens", f->tokens, "tokens to generate")->check(CLI::Range(0, 1 << 20))->capture_default_str();
  cmd->add_option("--temp", f->temperature, "sampling temperature (0 = greedy)")->check(CLI::Range(0.0f, 100.0f))->capture_default_str();
  cmd->add_option("--top-p", f->top_p, "nucleus sampling mass")->check(CLI::Range(0.0f, 1.0f))->capture_default_str();
  cmd->add_option("--seed", f->seed, "sampling seed")->capture_default_str();
  cmd->add_option("--threads", f->threads, "threads (0 = every CPU)")->check(CLI::Range(0, 1024))->capture_default_str();
  cmd->add_option("--trace", f->trace, "write the timeline (every step, layer, kernel call, collective): Chrome JSON (.json, .json.gz) or Perfetto (.pftrace)");
  cmd->add_flag("--json", f->json, "Print one JSON object with the text, token ids and speeds instead of streaming");
  cmd->callback([&inv, f] { inv.run = [f] { return run_generate(*f); }; });
}

}  // namespace

RECUR_CLI_COMMAND(generate, register_generate);

}  // namespace recur::cli
