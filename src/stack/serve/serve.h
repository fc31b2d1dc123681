// recur serve: an OpenAI-compatible HTTP server over one model (docs/serve.md).
//
// HTTP threads parse and check each request (request.h, prompt.h), put it on a bounded FIFO
// (job_queue.h; full = 429) and relay what an engine worker (engine_workers.h; by default a
// continuous-batching scheduler, batch_scheduler.h) generates, as one JSON response or as SSE
// chunks. A client that disconnects mid-stream cancels its generation.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "core/knobs.h"
#include "core/status.h"

namespace recur::serve {

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8000;             // 0 = any free port
  std::string api_key;         // empty = no authentication (--api-key-file, RECUR_API_KEY)
  std::string peer_key;        // disaggregated roles: what workers and the router show each other
                               // (--peer-key-file, RECUR_PEER_KEY; required by those roles)
  std::string model_path;      // GGUF file
  std::string model_id;        // the name clients send; empty = the file's stem
  int workers = 1;             // engine workers, each with its own pool (and batch)
  int threads_per_worker = 0;  // 0 = CPUs / workers
  bool batching = true;        // continuous batching (false: one sequence per worker)
  int max_seqs = 16;           // sequences in one worker's batch
  int max_batch_tokens = 256;  // tokens per forward (decode tokens plus prefill chunks)
  size_t queue_size = 64;      // requests waiting for a worker before 429
  int http_threads = 32;       // connections served at once (keep-alive holds one each)
  size_t max_body_bytes = 1 << 20;
  int read_timeout_s = 10;      // a request's head and body must arrive within this (408)
  int request_timeout_s = 600;  // a generation's deadline from arrival (a request's "timeout" may lower it)
  Config knobs;
};

// Loads the model, listens, prints "listening on http://HOST:PORT" on stderr and serves until
// SIGTERM or SIGINT, then stops accepting, cancels running generations and returns.
Status run_server(const ServeOptions& options);

}  // namespace recur::serve
