#include "serve/loadgen.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

#include "serve/loadgen_client.h"

namespace recur::serve {
namespace {

// A completion body with input_len random token ids; ignore_eos makes every request generate
// exactly output_len tokens, so runs compare across servers.
std::string request_body(const LoadgenOptions& o, const std::string& model, uint64_t request_index) {
  std::mt19937_64 rng(o.seed * 1000003 + request_index);
  // Ids 100..353: inside every vocabulary recur writes (>= 354) and every real model's.
  std::uniform_int_distribution<int> id(100, 353);
  std::vector<int> prompt(size_t(o.input_len));
  for (int& t : prompt) t = id(rng);
  nlohmann::json j = {{"model", model}, {"prompt", prompt}, {"max_tokens", o.output_len}, {"temperature", 0},
                      {"ignore_eos", true}, {"stream", o.stream}};
  if (o.stream) j["stream_options"] = {{"include_usage", true}};
  return j.dump();
}

Status check(const LoadgenOptions& o) {
  if (o.concurrency < 1) return invalid_argument("--concurrency is {}; expected at least 1", o.concurrency);
  if (!(o.duration_s >= 0)) return invalid_argument("--duration-s is {}; expected 0 (off) or more seconds", o.duration_s);
  if (o.requests < 1) return invalid_argument("--requests is {}; expected at least 1", o.requests);
  if (o.input_len < 1 || o.output_len < 1)
    return invalid_argument("--input-len {} and --output-len {}: expected at least 1 each", o.input_len, o.output_len);
  return ok_status();
}

}  // namespace

Percentiles percentiles(std::vector<double> values) {
  Percentiles p;
  p.count = values.size();
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  auto at = [&](double q) {
    double pos = q * double(values.size() - 1);
    size_t lo = size_t(pos);
    size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (values[hi] - values[lo]) * (pos - double(lo));
  };
  p.mean = std::accumulate(values.begin(), values.end(), 0.0) / double(values.size());
  p.p50 = at(0.5);
  p.p90 = at(0.9);
  p.p99 = at(0.99);
  return p;
}

Result<LoadgenReport> run_loadgen(const LoadgenOptions& o) {
  RECUR_RETURN_IF_ERROR(check(o));
  RECUR_ASSIGN_OR_RETURN(auto probe, LoadgenClient::connect(o.url, o.api_key));
  std::string model = o.model;
  if (model.empty()) {
    RECUR_ASSIGN_OR_RETURN(model, probe->first_model());
  }
  // Duration mode keeps every client busy until the deadline; otherwise they share `requests`.
  const bool timed = o.duration_s > 0;
  const int client_count = timed ? o.concurrency : std::min(o.concurrency, o.requests);
  std::atomic<int> next{0};
  std::vector<std::unique_ptr<LoadgenClient>> clients;
  for (int i = 0; i < client_count; ++i) {
    RECUR_ASSIGN_OR_RETURN(auto c, LoadgenClient::connect(o.url, o.api_key));
    clients.push_back(std::move(c));
  }
  const auto t0 = std::chrono::steady_clock::now();
  const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                 std::chrono::duration<double>(o.duration_s));
  auto another = [&](int i) { return timed ? std::chrono::steady_clock::now() < deadline : i < o.requests; };
  std::vector<std::vector<RequestSample>> client_samples(clients.size());
  std::vector<std::thread> threads;
  for (size_t k = 0; k < clients.size(); ++k)
    threads.emplace_back([&, k] {
      for (int i; another(i = next.fetch_add(1));)
        client_samples[k].push_back(clients[k]->complete(request_body(o, model, uint64_t(i)), o.stream));
    });
  for (auto& t : threads) t.join();
  std::vector<RequestSample> samples;
  for (auto& cs : client_samples) samples.insert(samples.end(), cs.begin(), cs.end());
  LoadgenReport r;
  r.options = o;
  r.options.requests = int(samples.size());  // what was sent, in duration mode too
  r.model = model;
  r.duration_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> ttft, itl, latency;
  for (const RequestSample& s : samples) {
    ++r.statuses[s.status];
    if (!s.ok()) {
      ++r.failed;
      continue;
    }
    ++r.succeeded;
    r.output_tokens += s.output_tokens;
    latency.push_back(s.latency_s * 1e3);
    if (s.ttft_s >= 0) ttft.push_back(s.ttft_s * 1e3);
    for (double x : s.itl_s) itl.push_back(x * 1e3);
  }
  r.request_throughput = r.duration_s > 0 ? r.succeeded / r.duration_s : 0;
  r.output_throughput = r.duration_s > 0 ? r.output_tokens / r.duration_s : 0;
  r.ttft_ms = percentiles(std::move(ttft));
  r.itl_ms = percentiles(std::move(itl));
  r.latency_ms = percentiles(std::move(latency));
  return r;
}

}  // namespace recur::serve
