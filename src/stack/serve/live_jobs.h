// The jobs the server is answering right now, so that shutdown can cancel them all (a waiting
// HTTP thread then gets its job back quickly instead of holding the server open). Thread-safe.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_set>

#include "serve/job.h"

namespace recur::serve {

class LiveJobs {
 public:
  void add(const std::shared_ptr<Job>& job) {
    std::lock_guard lock(mu_);
    jobs_.insert(job);
  }
  void remove(const std::shared_ptr<Job>& job) {
    std::lock_guard lock(mu_);
    jobs_.erase(job);
  }
  void cancel_all() {
    std::lock_guard lock(mu_);
    for (const auto& job : jobs_) job->cancel();
  }

 private:
  std::mutex mu_;
  std::unordered_set<std::shared_ptr<Job>> jobs_;
};

}  // namespace recur::serve
