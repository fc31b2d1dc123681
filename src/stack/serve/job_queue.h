// The bounded FIFO between the HTTP threads and the engine workers. try_push refuses when the
// queue is full (the server answers 429), so waiting work never grows without bound. close()
// wakes every worker; pop() then drains what is left and returns null. Thread-safe.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>

#include "serve/job.h"

namespace recur::serve {

class JobQueue {
 public:
  explicit JobQueue(size_t capacity) : capacity_(capacity) {}

  // False when full or closed.
  bool try_push(std::shared_ptr<Job> job);
  // Blocks for the oldest job; null once closed and empty.
  std::shared_ptr<Job> pop();
  // The oldest job if there is one and `admit` accepts it, else null at once (a batching
  // scheduler takes work only while it has room, and leaves the rest queued in order).
  std::shared_ptr<Job> try_pop_if(const std::function<bool(const Job&)>& admit);
  // Takes `job` out if it is still waiting (its client left: its place goes to the next request);
  // false when a worker took it already.
  bool remove(const std::shared_ptr<Job>& job);
  void close();
  size_t depth() const;
  size_t capacity() const { return capacity_; }

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> jobs_;
  bool closed_ = false;
};

}  // namespace recur::serve
