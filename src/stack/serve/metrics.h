// The server's Prometheus metrics (text exposition format 0.0.4): requests by endpoint and
// status, TTFT, inter-token latency and request latency histograms, queue depth, running
// requests, prompt and generated tokens, and the batching scheduler's forwards (sequences and
// tokens per forward, KV pages). Thread-safe; recording takes one short lock.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace recur::serve {

class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double value);
  // `name`_bucket{le=...}, _sum and _count lines.
  void render(std::string& out, const std::string& name, const std::string& help) const;

 private:
  std::vector<double> bounds_;
  mutable std::mutex mu_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; the last is +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

class Metrics {
 public:
  Metrics();

  void count_request(const std::string& path, int status);
  void observe_ttft(double seconds) { ttft_.observe(seconds); }
  void observe_itl(double seconds) { itl_.observe(seconds); }
  void observe_latency(double seconds) { latency_.observe(seconds); }
  void add_tokens(int prompt, int generated);
  void count_cancelled() { cancelled_.fetch_add(1, std::memory_order_relaxed); }
  std::atomic<int>& running() { return running_; }
  // One forward of the batching scheduler: the sequences and tokens it carried and the KV pages
  // in use after it (of the worker's batch; with several workers, the last one to report).
  void observe_forward(int sequences, int tokens, int64_t kv_pages_used, int64_t kv_pages_total);

  // The whole page; queue_depth is read when it is rendered.
  std::string render(size_t queue_depth, size_t queue_capacity) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
  Histogram ttft_, itl_, latency_, forward_tokens_;
  std::atomic<uint64_t> prompt_tokens_{0}, generated_tokens_{0}, cancelled_{0}, forwards_{0};
  std::atomic<int> running_{0}, batch_size_{0};
  std::atomic<int64_t> kv_pages_used_{0}, kv_pages_total_{0};
};

}  // namespace recur::serve
