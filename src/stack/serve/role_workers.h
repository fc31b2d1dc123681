// Disaggregated serving (docs/serve.md, "Roles"): `recur serve --role prefill|decode|router`,
// each role its own process.
//
//   router   the OpenAI front end. Per request it tokenizes and checks it (prompt.h), reserves a
//            receive slot on a decode worker, has a prefill worker prefill the prompt and send
//            the state into that slot, then relays what the decode worker generates. A chat's
//            images are encoded here (in process or by --encode's worker) and sent as rows with
//            the prompt to the prefill worker. Workers
//            are chosen round-robin over --prefill / --decode, skipping those found dead.
//   prefill  prefills prompts in a batch whose layer hook sends each layer's state (KV pages or
//            KDA state, engine/sequence_state.h) through the transfer engine as soon as the layer
//            is computed, then the last logits.
//   decode   owns the receive area (shared memory, served over TCP too), receives and verifies
//            the layers, and decodes its requests together in a continuous-batching scheduler
//            (batch_scheduler.h: each request's state installed in a fresh sequence, its own
//            sampling parameters), streaming pieces back to the router.
// Control messages are JSON over HTTP (role_protocol.h); the state goes through the transfer
// engine (src/transfer): shared memory on one host, TCP across hosts (knob serve.kv_transfer).
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "serve/serve.h"

namespace recur::serve {

struct RoleOptions {
  ServeOptions serve;                      // host, port, model, API key (router), threads, knobs
  std::vector<std::string> prefill_urls;   // router: "http://host:port" of each prefill worker
  std::vector<std::string> decode_urls;    // router: of each decode worker
  std::string kv_listen = "127.0.0.1:0";   // decode: the transfer engine's TCP address
  int kv_slots = 4;                        // decode: receive slots (requests between reserve and decode)
  int kv_reserve_timeout_s = 30;           // decode: a reservation unused this long is released
};

Status run_prefill_worker(const RoleOptions& options);
Status run_decode_worker(const RoleOptions& options);
Status run_router(const RoleOptions& options);

}  // namespace recur::serve
