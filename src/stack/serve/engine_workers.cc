#include "serve/engine_workers.h"

#include <algorithm>

#include "engine/generate.h"
#include "serve/job_output.h"

namespace recur::serve {

Result<std::unique_ptr<EngineWorkers>> EngineWorkers::start(const Model& model, const WorkerOptions& options,
                                                             JobQueue& queue, Metrics& metrics, const Config& knobs) {
  const int workers = options.workers;
  if (workers < 1) return invalid_argument("--workers is {}; expected at least 1", workers);
  const int threads = options.threads_per_worker > 0 ? options.threads_per_worker
                                                     : std::max(1, int(std::thread::hardware_concurrency()) / workers);
  std::unique_ptr<EngineWorkers> w(new EngineWorkers(model, queue, metrics, knobs));
  for (int i = 0; i < workers; ++i) {
    // Unpinned: several pools would otherwise pin their workers onto the same first CPUs.
    RECUR_ASSIGN_OR_RETURN(auto pool, ThreadPool::create({.threads = threads, .pin = workers == 1}));
    w->pools_.push_back(std::move(pool));
  }
  for (size_t i = 0; options.batching && i < w->pools_.size(); ++i) {
    auto scheduler = BatchScheduler::create(model, *w->pools_[i], options.scheduler, queue, metrics, knobs);
    if (!scheduler && scheduler.error().code() == ErrorCode::kUnsupported) break;  // one sequence per worker
    if (!scheduler) return unexpected(std::move(scheduler).error());
    w->schedulers_.push_back(std::move(*scheduler));
  }
  for (size_t i = 0; i < w->pools_.size(); ++i) {
    if (w->batching())
      w->threads_.emplace_back([s = w->schedulers_[i].get()] { s->run(); });
    else
      w->threads_.emplace_back([raw = w.get(), p = w->pools_[i].get()] { raw->loop(*p); });
  }
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
  if (job.cancelled()) return JobOutput::finish_cancelled(job, metrics_);
  metrics_.running().fetch_add(1);
  JobOutput out(job, metrics_);
  if (!req.embedding_row.empty()) {  // a session prefills token ids only
    metrics_.running().fetch_sub(1);
    return out.fail("images need the batching scheduler (--batching on, a model with a batched forward)");
  }
  if (req.logprobs) {  // the server refuses these first (400); a session returns no logits
    metrics_.running().fetch_sub(1);
    return out.fail("logprobs need the batching scheduler (--batching on, a model with a batched forward)");
  }
  auto stats = generate_from_ids(model_, pool, req.prompt_ids, req.options,
                                 [&](std::string_view piece) { return out.emit(piece); }, knobs_);
  metrics_.running().fetch_sub(1);
  if (!stats) return out.fail(stats.error().to_string());
  const bool eos = req.options.stop_at_eos && !stats->tokens.empty() &&
                   stats->tokens.back() == model_.tokenizer().vocabulary().eos;
  out.finish(int(req.prompt_ids.size()), stats->generated_tokens, eos);
}

}  // namespace recur::serve
