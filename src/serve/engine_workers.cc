#include "serve/engine_workers.h"

#include <algorithm>

#include "core/clock.h"
#include "engine/generate.h"
#include "serve/stop_matcher.h"

namespace recur::serve {

Result<std::unique_ptr<EngineWorkers>> EngineWorkers::start(const Model& model, int workers, int threads_per_worker,
                                                             JobQueue& queue, Metrics& metrics, const Config& knobs) {
  if (workers < 1) return invalid_argument("--workers is {}; expected at least 1", workers);
  if (threads_per_worker <= 0)
    threads_per_worker = std::max(1, int(std::thread::hardware_concurrency()) / workers);
  std::unique_ptr<EngineWorkers> w(new EngineWorkers(model, queue, metrics, knobs));
  for (int i = 0; i < workers; ++i) {
    // Unpinned: several pools would otherwise pin their workers onto the same first CPUs.
    RECUR_ASSIGN_OR_RETURN(auto pool, ThreadPool::create({.threads = threads_per_worker, .pin = workers == 1}));
    w->pools_.push_back(std::move(pool));
  }
  for (auto& pool : w->pools_) w->threads_.emplace_back([raw = w.get(), p = pool.get()] { raw->loop(*p); });
  return w;
}

EngineWorkers::~EngineWorkers() {
  queue_.close();
  for (auto& t : threads_) t.join();
}

void EngineWorkers::loop(ThreadPool& pool) {
  while (std::shared_ptr<Job> job = queue_.pop()) run(*job, pool);
}

void EngineWorkers::run(Job& job, ThreadPool& pool) {
  const PreparedRequest& req = job.request();
  JobResult result;
  result.prompt_tokens = int(req.prompt_ids.size());
  if (job.cancelled()) {
    result.finish_reason = "cancelled";
    metrics_.count_cancelled();
    job.finish(std::move(result));
    return;
  }
  metrics_.running().fetch_add(1);
  StopMatcher matcher(req.stop);
  int64_t last_ns = 0;
  auto stats = generate_from_ids(model_, pool, req.prompt_ids, req.options, [&](std::string_view piece) {
    int64_t t = now_ns();
    if (last_ns == 0)
      metrics_.observe_ttft(double(t - job.arrival_ns()) / 1e9);
    else
      metrics_.observe_itl(double(t - last_ns) / 1e9);
    last_ns = t;
    job.append(matcher.feed(piece));
    return !matcher.stopped() && !job.cancelled();
  }, knobs_);
  metrics_.running().fetch_sub(1);
  if (!stats) {
    result.finish_reason = "error";
    result.error = ApiError{500, "generation failed: " + stats.error().to_string(), "server_error", "", "engine_error"};
    job.finish(std::move(result));
    return;
  }
  job.append(matcher.flush());
  result.completion_tokens = stats->generated_tokens;
  metrics_.add_tokens(stats->prompt_tokens, stats->generated_tokens);
  metrics_.observe_latency(double(now_ns() - job.arrival_ns()) / 1e9);
  const bool eos = req.options.stop_at_eos && !stats->tokens.empty() &&
                   stats->tokens.back() == model_.tokenizer().vocabulary().eos;
  if (job.cancelled()) {
    result.finish_reason = "cancelled";
    metrics_.count_cancelled();
  } else {
    result.finish_reason = eos || matcher.stopped() ? "stop" : "length";
  }
  job.finish(std::move(result));
}

}  // namespace recur::serve
