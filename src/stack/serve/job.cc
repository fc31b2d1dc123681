#include "serve/job.h"

namespace recur::serve {

void Job::append(std::string_view text) {
  if (text.empty()) return;
  {
    std::lock_guard lock(mu_);
    pending_ += text;
  }
  cv_.notify_all();
}

void Job::append_logprob(TokenLogprob entry) {
  {
    std::lock_guard lock(mu_);
    pending_logprobs_.push_back(std::move(entry));
  }
  cv_.notify_all();
}

void Job::finish(JobResult result) {
  {
    std::lock_guard lock(mu_);
    result_ = std::move(result);
  }
  cv_.notify_all();
}

Job::Update Job::wait_update() {
  for (;;)
    if (auto u = wait_update_for(std::chrono::hours(1))) return std::move(*u);
}

std::optional<Job::Update> Job::wait_update_for(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (!cv_.wait_for(lock, timeout, [&] { return !pending_.empty() || !pending_logprobs_.empty() || result_.has_value(); }))
    return std::nullopt;
  Update u;
  u.text.swap(pending_);
  u.logprobs.swap(pending_logprobs_);
  if (result_) u.result = *result_;
  return u;
}

}  // namespace recur::serve
