// recur loadgen: a load generator for OpenAI-compatible servers (recur serve, llama-server,
// vLLM), in the spirit of `vllm bench serve`. `concurrency` clients send `requests` completions
// in total, each with `input_len` random prompt token ids and max_tokens = `output_len` with
// ignore_eos, and time them: throughput, TTFT and inter-token latency (streamed requests only;
// a chunk counts as one token arrival), end-to-end latency. With `duration_s` > 0 the clients
// instead keep sending until that many seconds have passed (a soak test; `requests` is ignored).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/status.h"

namespace recur::serve {

struct LoadgenOptions {
  std::string url = "http://127.0.0.1:8000";
  int concurrency = 1;
  int requests = 16;
  double duration_s = 0;  // > 0: send for this long instead of `requests` in total
  int input_len = 32;
  int output_len = 32;
  bool stream = false;
  std::string model;    // empty = the first model /v1/models lists
  std::string api_key;  // sent as a Bearer token when set
  uint64_t seed = 0;    // prompt token ids
};

// What one request measured.
struct RequestSample {
  int status = 0;  // HTTP status; 0 = no response (connection failed)
  double ttft_s = -1;  // streamed only: to the first chunk with text
  std::vector<double> itl_s;  // streamed only: between chunks with text
  double latency_s = 0;
  int output_tokens = 0;  // from the response's usage
  bool ok() const { return status == 200; }
};

struct Percentiles {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
  size_t count = 0;
};

struct LoadgenReport {
  LoadgenOptions options;
  std::string model;
  int succeeded = 0, failed = 0;
  std::map<int, int> statuses;  // HTTP status -> count (0 = connection failed)
  double duration_s = 0;
  double request_throughput = 0;  // succeeded requests per second
  double output_throughput = 0;   // output tokens per second
  int output_tokens = 0;
  Percentiles ttft_ms, itl_ms, latency_ms;
};

Result<LoadgenReport> run_loadgen(const LoadgenOptions& options);
Percentiles percentiles(std::vector<double> values);
nlohmann::json report_json(const LoadgenReport& report);
std::string report_table(const LoadgenReport& report);

}  // namespace recur::serve
