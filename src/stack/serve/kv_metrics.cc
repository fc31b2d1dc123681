#include "serve/kv_metrics.h"

#include <fmt/format.h>

namespace recur::serve {

KvTransferMetrics::KvTransferMetrics()
    : seconds_({0.0001, 0.0003, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1, 3, 10}) {}

void KvTransferMetrics::observe(uint64_t bytes, double seconds) {
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
  seconds_.observe(seconds);
}

void KvTransferMetrics::render(std::string& out) const {
  out += "# HELP recur_kv_transfer_bytes_total KV/KDA state bytes moved between prefill and decode workers\n";
  out += "# TYPE recur_kv_transfer_bytes_total counter\n";
  out += fmt::format("recur_kv_transfer_bytes_total {}\n", bytes_.load(std::memory_order_relaxed));
  out += "# HELP recur_kv_transfer_failures_total transfers that failed (peer gone, timeout, checksum)\n";
  out += "# TYPE recur_kv_transfer_failures_total counter\n";
  out += fmt::format("recur_kv_transfer_failures_total {}\n", failures_.load(std::memory_order_relaxed));
  seconds_.render(out, "recur_kv_transfer_seconds", "time from a prompt's first layer sent to its last one complete");
}

}  // namespace recur::serve
