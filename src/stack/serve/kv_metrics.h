// The KV transfer's Prometheus metrics (disaggregated serving): bytes moved and the time from a
// prompt's first layer sent (or expected) to its last one complete. Thread-safe.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "serve/metrics.h"

namespace recur::serve {

class KvTransferMetrics {
 public:
  KvTransferMetrics();
  void observe(uint64_t bytes, double seconds);
  void count_failure() { failures_.fetch_add(1, std::memory_order_relaxed); }
  // recur_kv_transfer_bytes_total, recur_kv_transfer_seconds (histogram), recur_kv_transfer_failures_total.
  void render(std::string& out) const;

 private:
  std::atomic<uint64_t> bytes_{0}, failures_{0};
  Histogram seconds_;
};

}  // namespace recur::serve
