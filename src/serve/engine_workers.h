// N engine workers that take jobs from the queue in FIFO order and generate them, one sequence
// at a time each. Every worker owns its thread pool and creates a session per job; the model's
// weights are shared read-only. The destructor closes the queue, cancels nothing by itself (the
// server cancels jobs first) and joins the workers.
#pragma once

#include <memory>
#include <thread>
#include <vector>

#include "core/knobs.h"
#include "core/status.h"
#include "core/thread_pool.h"
#include "engine/model.h"
#include "serve/job_queue.h"
#include "serve/metrics.h"

namespace recur::serve {

class EngineWorkers {
 public:
  // threads_per_worker: each worker's pool size (0 = the process's CPUs divided by workers).
  static Result<std::unique_ptr<EngineWorkers>> start(const Model& model, int workers, int threads_per_worker,
                                                      JobQueue& queue, Metrics& metrics, const Config& knobs);
  ~EngineWorkers();
  EngineWorkers(const EngineWorkers&) = delete;
  EngineWorkers& operator=(const EngineWorkers&) = delete;

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
  std::vector<std::thread> threads_;
};

}  // namespace recur::serve
