#include "serve/job_queue.h"

namespace recur::serve {

bool JobQueue::try_push(std::shared_ptr<Job> job) {
  {
    std::lock_guard lock(mu_);
    if (closed_ || jobs_.size() >= capacity_) return false;
    jobs_.push_back(std::move(job));
  }
  cv_.notify_one();
  return true;
}

std::shared_ptr<Job> JobQueue::pop() {
  std::unique_lock lock(mu_);
  cv_.wait(lock, [&] { return closed_ || !jobs_.empty(); });
  if (jobs_.empty()) return nullptr;
  auto job = std::move(jobs_.front());
  jobs_.pop_front();
  return job;
}

std::shared_ptr<Job> JobQueue::try_pop_if(const std::function<bool(const Job&)>& admit) {
  std::lock_guard lock(mu_);
  if (jobs_.empty() || !admit(*jobs_.front())) return nullptr;
  auto job = std::move(jobs_.front());
  jobs_.pop_front();
  return job;
}

bool JobQueue::remove(const std::shared_ptr<Job>& job) {
  std::lock_guard lock(mu_);
  for (auto it = jobs_.begin(); it != jobs_.end(); ++it)
    if (*it == job) {
      jobs_.erase(it);
      return true;
    }
  return false;
}

void JobQueue::close() {
  {
    std::lock_guard lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

size_t JobQueue::depth() const {
  std::lock_guard lock(mu_);
  return jobs_.size();
}

}  // namespace recur::serve
