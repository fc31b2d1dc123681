// What the disaggregated roles (role_workers.h) share: the KV layout of a model's transfer, the
// HTTP plumbing of a worker process, and JSON helpers for the control messages.
//
// Transfer layout: one block per layer (engine/sequence_state.h's layer state), then one more
// "layer" holding the prompt's last logits (vocab float32), so the decode worker samples the
// first token itself with the request's sampler. Slots are sized for a sequence of the model's
// whole context; both sides derive the same layout from the same model.
//
// Every route but GET /health needs "Authorization: Bearer <peer key>" (bearer_auth.h).
// Control messages (JSON bodies, errors as OpenAI error JSON with a 4xx/5xx status):
//   decode  POST /kv/reserve {}  -> {slot, generation, token, area_offset, shm, tcp, ucx (empty unless
//             serve.kv_transfer=ucx), slot_bytes}
//             (the slot is released unless a /decode or /kv/release naming it and its token comes
//             within --kv-reserve-timeout-s)
//   decode  POST /kv/release {slot, token}  (409 when the token is not the slot's reservation's)
//   prefill POST /prefill {request, prompt_ids, shm, tcp, ucx, area_offset, generation, slot_bytes,
//             and for a chat with images: embedding_dim, embedding_row, embeddings}
//             -> {prompt_tokens, bytes, transfer_seconds (layer 0 sent to all complete),
//                 prefill_seconds (forward start to all complete), hook_seconds (the forward
//                 thread's time exporting and queueing layers), tail_seconds (forward end to all
//                 complete), transport}
//   decode  POST /decode {request, slot, token, generation, prompt_ids, max_tokens, temperature, top_p,
//             seed, stop_at_eos, stop} -> 200 and newline-delimited JSON: {"text": ...} lines,
//             then {"finish_reason", "completion_tokens"} or {"error": {...}}
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/status.h"
#include "core/thread_pool.h"
#include "serve/serve_loop.h"
#include "engine/model.h"
#include "serve/api_error.h"
#include "serve/prompt.h"
#include "serve/serve.h"
#include "transfer/kv_transfer.h"

namespace httplib {
class Server;
struct Response;
}  // namespace httplib

namespace recur::serve {

// A worker's model, pool and one-sequence batch (prompt chunks of 256 rows, as a session
// prefills: generate.h), and the transfer layout they imply.
struct RoleEngine {
  std::unique_ptr<Model> model;
  std::unique_ptr<ThreadPool> pool;
  std::unique_ptr<Batch> batch;
  BatchOptions batch_options;
  transfer::KvLayout layout;
};
Result<RoleEngine> role_open_engine(const ServeOptions& options);

// The knob serve.kv_transfer: "shm", "tcp", "ucx" or "off".
Result<std::string> role_kv_transfer_mode(const Config& knobs);

// A prompt's image rows (prompt.h PreparedRequest: embeddings, embedding_row, embedding_dim) in a
// /prefill message: "embedding_dim", "embedding_row" (per prompt position, -1 for a token) and
// "embeddings" (base64 of the rows as little-endian float32). Nothing is added without images.
void role_put_prompt_embeddings(nlohmann::json& msg, const PreparedRequest& p);
// Reads them into `p` (whose prompt_ids are set); a message without them leaves p's empty. Errors
// (kInvalidArgument) name the field: a dimension other than `model_dim`, a row list not one per
// prompt position, a row index outside the rows sent, bad base64.
Status role_get_prompt_embeddings(const nlohmann::json& msg, int model_dim, PreparedRequest& p);

// Parses a control message; a malformed one is a 400 naming the field.
expected<nlohmann::json, ApiError> role_parse_body(std::string_view body);
void role_send_error(httplib::Response& res, const ApiError& error);
void role_send_json(httplib::Response& res, const nlohmann::json& body);
// One line of a newline-delimited JSON stream.
std::string json_text_line(const nlohmann::json& j);

// Fault injection for tests (docs/serve.md, "Roles"): while the file named by the environment
// variable `env` exists, writes PATH.paused and waits until PATH is removed (10 s at most), so a
// test can act at a known point (kill a worker mid-transfer, queue requests behind a held one).
// Without the variable, or without the file, returns at once.
// `give_up`, when given, ends the wait early once it returns true (a cancelled request).
void role_fault_hold(const char* env, const std::function<bool()>& give_up = nullptr);

// The disaggregated roles need a peer key (RECUR_PEER_KEY or --peer-key-file): an error naming
// both when `options` has none.
Status role_check_peer_key(const ServeOptions& options, std::string_view role);

// GET /health ({"status":"ok","role":ROLE}) and GET /metrics (what `metrics` renders).
void role_add_worker_routes(httplib::Server& server, std::string_view role, std::function<std::string()> metrics);

}  // namespace recur::serve
