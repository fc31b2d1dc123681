#include "serve/role_protocol.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <unistd.h>

#include <fmt/format.h>
#include <httplib.h>

#include "core/knobs.h"
#include "engine/sequence_state.h"
#include "serve/image_decode.h"
#include "serve/openai_json.h"

namespace recur::serve {

namespace {

// The layout for `model` in `batch` (a live, empty sequence `seq` sizes the KDA states).
Result<transfer::KvLayout> role_kv_layout(Batch& batch, SeqId seq, const Model& model) {
  const ModelConfig& c = model.config();
  transfer::KvLayout layout{.layers = c.n_layers + 1, .blocks_per_layer = 1,
                            .max_block_bytes = size_t(c.vocab) * sizeof(float)};
  for (int l = 0; l < c.n_layers; ++l) {
    RECUR_ASSIGN_OR_RETURN(size_t bytes, layer_state_bytes(batch, seq, l, c.context));
    layout.max_block_bytes = std::max(layout.max_block_bytes, bytes);
  }
  RECUR_RETURN_IF_ERROR(layout.check());
  return layout;
}

}  // namespace

void role_fault_hold(const char* env, const std::function<bool()>& give_up) {
  const char* armed = std::getenv(env);
  if (armed == nullptr || !std::filesystem::exists(armed)) return;
  const std::string paused = std::string(armed) + ".paused";
  std::ofstream(paused) << getpid() << "\n";
  for (int i = 0; i < 1000 && std::filesystem::exists(armed) && !(give_up && give_up()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  std::error_code ignored;
  std::filesystem::remove(paused, ignored);
}

Result<RoleEngine> role_open_engine(const ServeOptions& o) {
  RoleEngine e;
  RECUR_ASSIGN_OR_RETURN(e.model, load_model(o.model_path, o.knobs));
  const int threads = o.threads_per_worker > 0 ? o.threads_per_worker
                                               : std::max(1, int(std::thread::hardware_concurrency()));
  RECUR_ASSIGN_OR_RETURN(e.pool, ThreadPool::create({.threads = threads}));
  const int context = e.model->config().context;
  e.batch_options = {.max_sequences = 1, .max_tokens = context, .max_batch_tokens = std::min(context, 256)};
  RECUR_ASSIGN_OR_RETURN(e.batch, e.model->new_batch(*e.pool, e.batch_options, o.knobs));
  RECUR_ASSIGN_OR_RETURN(SeqId probe, e.batch->add_sequence());
  RECUR_ASSIGN_OR_RETURN(e.layout, role_kv_layout(*e.batch, probe, *e.model));
  RECUR_RETURN_IF_ERROR(e.batch->free_sequence(probe));
  return e;
}

void role_add_worker_routes(httplib::Server& server, std::string_view role, std::function<std::string()> metrics) {
  const std::string health = json_text({{"status", "ok"}, {"role", role}});
  server.Get("/health", [health](const httplib::Request&, httplib::Response& res) {
    res.set_content(health, "application/json");
  });
  server.Get("/metrics", [metrics = std::move(metrics)](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics(), "text/plain; version=0.0.4");
  });
}

Status role_check_peer_key(const ServeOptions& options, std::string_view role) {
  if (!options.peer_key.empty()) return ok_status();
  return invalid_argument("--role {} needs a peer key shared by the router and its workers: set RECUR_PEER_KEY or "
                          "--peer-key-file FILE (docs/serve.md, \"Authentication\")", role);
}

Result<std::string> role_kv_transfer_mode(const Config& knobs) { return knobs.get("serve.kv_transfer"); }

void role_put_prompt_embeddings(nlohmann::json& msg, const PreparedRequest& p) {
  if (p.embedding_row.empty()) return;
  msg["embedding_dim"] = p.embedding_dim;
  msg["embedding_row"] = p.embedding_row;
  msg["embeddings"] = encode_base64(std::span(reinterpret_cast<const uint8_t*>(p.embeddings.data()),
                                              p.embeddings.size() * sizeof(float)));
}

Status role_get_prompt_embeddings(const nlohmann::json& msg, int model_dim, PreparedRequest& p) {
  if (!msg.contains("embedding_row")) return ok_status();
  const int dim = msg.at("embedding_dim").get<int>();
  if (dim != model_dim)
    return invalid_argument("prefill: embedding_dim is {}; expected the model's hidden size {}", dim, model_dim);
  auto rows = msg.at("embedding_row").get<std::vector<int32_t>>();
  if (rows.size() != p.prompt_ids.size())
    return invalid_argument("prefill: embedding_row has {} entries; expected one per prompt position ({})",
                            rows.size(), p.prompt_ids.size());
  RECUR_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                         decode_base64(msg.at("embeddings").get<std::string>(), "prefill: embeddings"));
  const size_t row_bytes = size_t(dim) * sizeof(float);
  if (bytes.size() % row_bytes != 0)
    return invalid_argument("prefill: embeddings hold {} bytes; expected whole rows of {} float32", bytes.size(), dim);
  const int64_t sent = int64_t(bytes.size() / row_bytes);
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i] < -1 || rows[i] >= sent)
      return invalid_argument("prefill: embedding_row[{}] = {}; expected -1 or a row below {}", i, rows[i], sent);
  p.embedding_dim = dim;
  p.embedding_row = std::move(rows);
  p.embeddings.resize(bytes.size() / sizeof(float));
  std::memcpy(p.embeddings.data(), bytes.data(), bytes.size());
  return ok_status();
}

expected<nlohmann::json, ApiError> role_parse_body(std::string_view body) {
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_discarded() || !j.is_object())
    return unexpected(ApiError{400, "control message: not a JSON object", "invalid_request_error", "", "invalid_json"});
  return j;
}

void role_send_error(httplib::Response& res, const ApiError& error) {
  res.status = error.http_status;
  res.set_content(error.body(), "application/json");
}

void role_send_json(httplib::Response& res, const nlohmann::json& body) {
  res.set_content(json_text(body), "application/json");
}

std::string json_text_line(const nlohmann::json& j) { return json_text(j) + "\n"; }

}  // namespace recur::serve
