// recur loadgen's two outputs: a table for people and a JSON object for scripts.
#include <fmt/format.h>

#include "serve/loadgen.h"

namespace recur::serve {
namespace {

nlohmann::json percentiles_json(const Percentiles& p) {
  if (p.count == 0) return nullptr;
  return {{"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"count", p.count}};
}

std::string percentiles_row(const char* name, const Percentiles& p) {
  if (p.count == 0) return fmt::format("{:<18} {:>10} {:>10} {:>10} {:>10}\n", name, "-", "-", "-", "-");
  return fmt::format("{:<18} {:>10.2f} {:>10.2f} {:>10.2f} {:>10.2f}\n", name, p.mean, p.p50, p.p90, p.p99);
}

}  // namespace

nlohmann::json report_json(const LoadgenReport& r) {
  nlohmann::json statuses = nlohmann::json::object();
  for (const auto& [status, n] : r.statuses) statuses[std::to_string(status)] = n;
  const LoadgenOptions& o = r.options;
  return {{"url", o.url}, {"model", r.model}, {"concurrency", o.concurrency}, {"requests", o.requests},
          {"duration_limit_s", o.duration_s > 0 ? nlohmann::json(o.duration_s) : nlohmann::json(nullptr)},
          {"input_len", o.input_len}, {"output_len", o.output_len}, {"stream", o.stream},
          {"succeeded", r.succeeded}, {"failed", r.failed}, {"statuses", statuses},
          {"duration_s", r.duration_s}, {"request_throughput", r.request_throughput},
          {"output_tokens", r.output_tokens}, {"output_throughput", r.output_throughput},
          {"ttft_ms", percentiles_json(r.ttft_ms)}, {"itl_ms", percentiles_json(r.itl_ms)},
          {"latency_ms", percentiles_json(r.latency_ms)}};
}

std::string report_table(const LoadgenReport& r) {
  const LoadgenOptions& o = r.options;
  std::string out = fmt::format("{} model {}: {} requests, concurrency {}, input {} output {} tokens{}\n", o.url, r.model,
                                o.requests, o.concurrency, o.input_len, o.output_len, o.stream ? ", streamed" : "");
  out += fmt::format("succeeded {}  failed {}  duration {:.2f} s\n", r.succeeded, r.failed, r.duration_s);
  for (const auto& [status, n] : r.statuses)
    if (status != 200) out += fmt::format("  HTTP {}: {}\n", status == 0 ? std::string("no response") : std::to_string(status), n);
  out += fmt::format("throughput {:.2f} req/s, {:.1f} output tok/s ({} tokens)\n", r.request_throughput,
                     r.output_throughput, r.output_tokens);
  out += fmt::format("{:<18} {:>10} {:>10} {:>10} {:>10}\n", "ms", "mean", "p50", "p90", "p99");
  out += percentiles_row("TTFT", r.ttft_ms);
  out += percentiles_row("ITL", r.itl_ms);
  out += percentiles_row("latency", r.latency_ms);
  if (!o.stream) out += "(TTFT and ITL need --stream)\n";
  return out;
}

}  // namespace recur::serve
