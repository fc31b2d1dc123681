// `recur serve`: the OpenAI-compatible server (docs/serve.md); --role prefill|decode|router run the
// disaggregated roles (serve/role_workers.h).
#include <filesystem>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "cli/cli.h"
#include "engine/model_cache.h"
#include "engine/gguf.h"
#include "engine/hf_checkpoint.h"
#include "engine/model_config.h"
#include "serve/bearer_auth.h"
#include "serve/encode_server.h"
#include "serve/image_encoder.h"
#include "serve/role_workers.h"
#include "serve/serve.h"

namespace recur::cli {
namespace {

struct ServeFlags {
  serve::ServeOptions options;
  std::string role = "all";
  serve::RoleOptions roles;  // --role prefill|decode|router
  int queue_size = 64;
  std::string batching = "on";
  std::string encode_url;    // --role all: images encoded by this encode worker instead of in process
  std::string vision_model;  // --role all|encode: the vision encoder GGUF (empty: the embedded default)
  std::string api_key_file, peer_key_file;
};

// The keys from --api-key-file / RECUR_API_KEY (else --api-key) and --peer-key-file / RECUR_PEER_KEY.
Status load_serve_keys(ServeFlags& f) {
  RECUR_ASSIGN_OR_RETURN(f.options.api_key, serve::load_secret(f.api_key_file, "RECUR_API_KEY", f.options.api_key));
  RECUR_ASSIGN_OR_RETURN(f.options.peer_key, serve::load_secret(f.peer_key_file, "RECUR_PEER_KEY", ""));
  return ok_status();
}

// The hidden size of the model at `path` (what image embeddings must have); the default model's
// without one.
Result<int> serve_model_dim(const std::string& path) {
  if (path.empty()) return 768;
  RECUR_ASSIGN_OR_RETURN(gguf::File file, read_model_file(path));  // GGUF or a Hugging Face directory
  RECUR_ASSIGN_OR_RETURN(ModelConfig c, ModelConfig::from_gguf(file));
  return c.dim;
}

// --role all and the router take images: encoded in process, or by the encode worker at --encode.
Status install_serve_image_encoder(const ServeFlags& f) {
  RECUR_ASSIGN_OR_RETURN(int dim, serve_model_dim(f.options.model_path));
  Result<std::unique_ptr<serve::ImageEncoder>> e = f.encode_url.empty()
                                                       ? serve::local_image_encoder(f.vision_model, dim)
                                                       : serve::remote_image_encoder(f.encode_url, f.options.api_key);
  if (!e) return unexpected(e.error());
  fmt::print(stderr, "images: {}\n", (*e)->describe());
  serve::install_image_encoder(std::move(*e));
  return ok_status();
}

// The flags that need no model, checked before one is loaded (or the default written): a
// mistake costs no model load. The libraries check them again where they are used.
Status check_serve_flags(const ServeFlags& f) {
  const serve::ServeOptions& o = f.options;
  if (f.batching == "on" && o.max_batch_tokens < o.max_seqs)
    return invalid_argument("--max-batch-tokens is {}; expected at least --max-seqs ({}), so that every running "
                            "sequence's decode token fits in one forward",
                            o.max_batch_tokens, o.max_seqs);
  if (!f.encode_url.empty() && !f.encode_url.starts_with("http://"))
    return invalid_argument("--encode '{}': expected http://host:port of a `recur serve --role encode` worker", f.encode_url);
  if (f.role == "router" && (f.roles.prefill_urls.empty() || f.roles.decode_urls.empty()))
    return invalid_argument("--role router needs --prefill URL[,URL...] and --decode URL[,URL...]");
  for (const auto& [flag, path] : {std::pair{"-m", o.model_path}, std::pair{"--vision-model", f.vision_model}}) {
    std::error_code ec;
    const bool model = std::string_view(flag) == "-m";
    if (!path.empty() && !std::filesystem::is_regular_file(path, ec) && !(model && is_hf_checkpoint(path)))
      return invalid_argument("{} {}: no such file (expected a GGUF model file{})", flag, path,
                              model ? " or a Hugging Face checkpoint directory holding config.json" : "");
  }
  return ok_status();
}

int run_serve(ServeFlags f) {
  if (Status s = check_serve_flags(f); !s) return report_failure(s.error());
  if (auto keys = load_serve_keys(f); !keys) return report_failure(keys.error());
  if (f.role == "encode") {
    Result<int> dim = serve_model_dim(f.options.model_path);
    if (!dim) return report_failure(dim.error());
    if (auto s = serve::run_encode_worker(f.options, f.vision_model, *dim); !s) return report_failure(s.error());
    return kExitOk;
  }
  if (f.options.model_path.empty()) {
    auto d = default_model_path();
    if (!d) return report_failure(d.error());
    f.options.model_path = *d;
  }
  f.options.queue_size = size_t(f.queue_size);
  f.options.batching = f.batching == "on";
  f.options.knobs = global_config();
  Status s = ok_status();
  if (f.role == "all") {
    s = install_serve_image_encoder(f);
    if (s) s = serve::run_server(f.options);
  } else {
    if (f.role == "router") s = install_serve_image_encoder(f);
    if (!s) return report_failure(s.error());
    f.roles.serve = f.options;
    s = f.role == "prefill" ? serve::run_prefill_worker(f.roles)
        : f.role == "decode" ? serve::run_decode_worker(f.roles)
                             : serve::run_router(f.roles);
  }
  if (!s) return report_failure(s.error());
  return kExitOk;
}

void register_serve(CLI::App& app, Invocation& inv) {
  auto f = std::make_shared<ServeFlags>();
  serve::ServeOptions& o = f->options;
  auto* cmd = app.add_subcommand("serve", "Serve a model over an OpenAI-compatible HTTP API (/v1/completions, "
                                          "/v1/chat/completions with SSE streaming, /v1/models, /health, /metrics) "
                                          "until SIGTERM or SIGINT. Without -m, the embedded default model.");
  cmd->add_option("--role", f->role, "process role: all (one process), the disaggregated prefill, decode and router, "
                                     "or encode (the image encoder, POST /v1/encode; docs/serve.md)")
      ->check(CLI::IsMember({"all", "encode", "prefill", "decode", "router"}))->capture_default_str();
  cmd->add_option("--encode", f->encode_url, "--role all|router: encode images through this encode worker "
                                             "(http://host:port) instead of in process");
  cmd->add_option("--vision-model", f->vision_model, "--role all|router|encode: the vision encoder GGUF (default: the "
                                                     "embedded one projecting to -m's hidden size, written once into the "
                                                     "model cache; --role encode reads only -m's metadata)");
  cmd->add_option("--prefill", f->roles.prefill_urls, "router: prefill workers' URLs (http://host:port), comma-separated")
      ->delimiter(',');
  cmd->add_option("--decode", f->roles.decode_urls, "router: decode workers' URLs, comma-separated")->delimiter(',');
  cmd->add_option("--kv-listen", f->roles.kv_listen, "decode: host:port the transfer engine serves TCP peers on")
      ->capture_default_str();
  cmd->add_option("--kv-slots", f->roles.kv_slots, "decode: receive slots (prompts between reserve and decode)")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("-m,--model", o.model_path, "GGUF model file, or a Hugging Face checkpoint directory");
  cmd->add_option("--model-name", o.model_id, "the model id clients send (default: the file name without .gguf)");
  cmd->add_option("--host", o.host, "address to bind")->capture_default_str();
  cmd->add_option("--port", o.port, "port (0 = any free port, printed on stderr)")->check(CLI::Range(0, 65535))->capture_default_str();
  cmd->add_option("--api-key", o.api_key, "require 'Authorization: Bearer KEY' on every route but /health (shows in "
                                          "`ps`: prefer --api-key-file or RECUR_API_KEY)");
  cmd->add_option("--api-key-file", f->api_key_file, "read the API key from this file (one line); also RECUR_API_KEY");
  cmd->add_option("--peer-key-file", f->peer_key_file, "--role prefill|decode|router: the key they show each other, "
                                                       "from this file (one line); also RECUR_PEER_KEY. Required by those roles");
  cmd->add_option("--kv-reserve-timeout-s", f->roles.kv_reserve_timeout_s,
                  "decode: a receive slot reserved but not used this long is released")
      ->check(CLI::Range(1, 3600))->capture_default_str();
  cmd->add_option("--read-timeout-s", o.read_timeout_s, "a request's headers and body must arrive within this many "
                                                        "seconds of its first byte (408 and close beyond)")
      ->check(CLI::Range(1, 3600))->capture_default_str();
  cmd->add_option("--request-timeout-s", o.request_timeout_s, "a generation's deadline from its arrival (408 beyond; "
                                                              "a request's \"timeout\" field may lower it)")
      ->check(CLI::Range(1, 86400))->capture_default_str();
  cmd->add_option("--workers", o.workers, "engine workers, each with its own thread pool and batch")->check(CLI::Range(1, 256))->capture_default_str();
  cmd->add_option("--threads", o.threads_per_worker, "threads per engine worker (0 = CPUs / workers)")->check(CLI::Range(0, 1024))->capture_default_str();
  cmd->add_option("--batching", f->batching, "continuous batching (off: one sequence per worker, a session per request)")
      ->check(CLI::IsMember({"on", "off"}))->capture_default_str();
  cmd->add_option("--max-seqs", o.max_seqs, "sequences one worker batches together")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--max-batch-tokens", o.max_batch_tokens, "tokens per forward: decode tokens plus prompt chunks (>= --max-seqs)")
      ->check(CLI::Range(1, 1 << 16))->capture_default_str();
  cmd->add_option("--queue-size", f->queue_size, "requests waiting for a worker before 429")->check(CLI::Range(1, 1 << 20))->capture_default_str();
  cmd->add_option("--http-threads", o.http_threads, "connections served at once")->check(CLI::Range(1, 4096))->capture_default_str();
  cmd->add_option("--max-body", o.max_body_bytes, "largest request body in bytes (413 beyond)")->check(CLI::Range(1024, 1 << 30))->capture_default_str();
  cmd->callback([&inv, f] { inv.run = [f] { return run_serve(*f); }; });
}

}  // namespace

RECUR_CLI_COMMAND(serve, register_serve);

}  // namespace recur::cli
