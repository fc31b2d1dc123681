// N engine workers that take jobs from the queue in FIFO order. Each worker owns its thread pool
// and, by default, a continuous-batching scheduler (batch_scheduler.h: up to --max-seqs sequences
// in one Batch, one forward per iteration). Where the model has no batched forward
// (Model::new_batch answers unsupported, e.g. engine.numerics=f64_reference) or batching is off,
// a worker generates one sequence at a time with a session per job. The model's weights are
// shared read-only. The destructor closes the queue, cancels nothing by itself (the server
// cancels jobs first) and joins the workers.
#pragma once

#include <memory>
#include <thread>
#include <vector>

#include "core/knobs.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "engine/model.h"
#include "serve/batch_scheduler.h"
#include "serve/job_queue.h"
#include "serve/metrics.h"

namespace recur::serve {

struct WorkerOptions {
  int workers = 1;
  int threads_per_worker = 0;  // each worker's pool size (0 = the process's CPUs divided by workers)
  bool batching = true;        // false: one sequence per worker (the A/B baseline)
  SchedulerOptions scheduler;
};

class EngineWorkers {
 public:
  static Result<std::unique_ptr<EngineWorkers>> start(const Model& model, const WorkerOptions& options,
                                                      JobQueue& queue, Metrics& metrics, const Config& knobs);
  ~EngineWorkers();
  EngineWorkers(const EngineWorkers&) = delete;
  EngineWorkers& operator=(const EngineWorkers&) = delete;

  // True when the workers run batching schedulers (false: batching off or unsupported).
  bool batching() const { return !schedulers_.empty(); }

 private:
  EngineWorkers(const Model& model, JobQueue& queue, Metrics& metrics, const Config& knobs)
      : model_(model), queue_(queue), metrics_(metrics), knobs_(knobs) {}
  void loop(ThreadPool& pool);
  void run(Job& job, ThreadPool& pool);

  const Model& model_;
  JobQueue& queue_;
  Metrics& metrics_;
  Config knobs_;
  std::vector<std::unique_ptr<ThreadPool>> pools_;
  std::vector<std::unique_ptr<BatchScheduler>> schedulers_;  // one per worker when batching
  std::vector<std::thread> threads_;
};

}  // namespace recur::serve
