#include "serve/metrics.h"

#include <fmt/format.h>

namespace recur::serve {
namespace {

std::vector<double> latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
}

std::vector<double> forward_token_buckets() { return {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048}; }

void render_scalar(std::string& out, const char* name, const char* type, const char* help, double value) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
}

}  // namespace

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  std::lock_guard lock(mu_);
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(std::string& out, const std::string& name, const std::string& help) const {
  std::lock_guard lock(mu_);
  out += fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cumulative);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n{}_sum {}\n{}_count {}\n", name, count_, name, sum_, name, count_);
}

Metrics::Metrics()
    : ttft_(latency_buckets()), itl_(latency_buckets()), latency_(latency_buckets()),
      forward_tokens_(forward_token_buckets()) {}

void Metrics::count_request(const std::string& path, int status) {
  std::lock_guard lock(mu_);
  ++requests_[{path, status}];
}

void Metrics::add_tokens(int prompt, int generated) {
  prompt_tokens_.fetch_add(uint64_t(prompt), std::memory_order_relaxed);
  generated_tokens_.fetch_add(uint64_t(generated), std::memory_order_relaxed);
}

void Metrics::observe_forward(int sequences, int tokens, int64_t kv_pages_used, int64_t kv_pages_total) {
  forward_tokens_.observe(tokens);
  forwards_.fetch_add(1, std::memory_order_relaxed);
  batch_size_.store(sequences, std::memory_order_relaxed);
  kv_pages_used_.store(kv_pages_used, std::memory_order_relaxed);
  kv_pages_total_.store(kv_pages_total, std::memory_order_relaxed);
}

std::string Metrics::render(size_t queue_depth, size_t queue_capacity) const {
  std::string out;
  out += "# HELP recur_http_requests_total HTTP requests answered, by path and status\n"
         "# TYPE recur_http_requests_total counter\n";
  {
    std::lock_guard lock(mu_);
    for (const auto& [key, n] : requests_)
      out += fmt::format("recur_http_requests_total{{path=\"{}\",status=\"{}\"}} {}\n", key.first, key.second, n);
  }
  ttft_.render(out, "recur_time_to_first_token_seconds", "from request arrival to the first generated token");
  itl_.render(out, "recur_inter_token_latency_seconds", "between consecutive generated tokens of one request");
  latency_.render(out, "recur_request_latency_seconds", "from arrival to the last token, finished generations");
  render_scalar(out, "recur_queue_depth", "gauge", "requests waiting for an engine worker", double(queue_depth));
  render_scalar(out, "recur_queue_capacity", "gauge", "requests the queue holds before answering 429",
                double(queue_capacity));
  render_scalar(out, "recur_requests_running", "gauge", "requests an engine worker is generating",
                running_.load(std::memory_order_relaxed));
  render_scalar(out, "recur_prompt_tokens_total", "counter", "prompt tokens prefilled",
                double(prompt_tokens_.load(std::memory_order_relaxed)));
  render_scalar(out, "recur_generation_tokens_total", "counter", "tokens generated",
                double(generated_tokens_.load(std::memory_order_relaxed)));
  render_scalar(out, "recur_requests_cancelled_total", "counter", "generations stopped because the client went away",
                double(cancelled_.load(std::memory_order_relaxed)));
  forward_tokens_.render(out, "recur_batch_forward_tokens", "tokens (decode plus prefill chunks) per batched forward");
  render_scalar(out, "recur_batch_forwards_total", "counter", "batched forwards the scheduler ran",
                double(forwards_.load(std::memory_order_relaxed)));
  render_scalar(out, "recur_batch_size", "gauge", "sequences in the last batched forward",
                batch_size_.load(std::memory_order_relaxed));
  render_scalar(out, "recur_kv_pages_used", "gauge", "KV-cache pages in use after the last batched forward",
                double(kv_pages_used_.load(std::memory_order_relaxed)));
  render_scalar(out, "recur_kv_pages_total", "gauge", "KV-cache pages of the batch (0: no attention layers)",
                double(kv_pages_total_.load(std::memory_order_relaxed)));
  return out;
}

}  // namespace recur::serve
