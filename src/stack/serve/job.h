// One request between the HTTP thread that answers it and the engine worker that generates it.
// The worker appends text and finishes the job; the HTTP thread waits for text and relays it;
// either side may cancel (the client went away, the server is stopping). Thread-safe.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "serve/api_error.h"
#include "serve/logprobs_json.h"
#include "serve/prompt.h"

namespace recur::serve {

struct JobResult {
  std::string finish_reason;  // "stop" (EOS or a stop sequence), "length", "cancelled"
  int prompt_tokens = 0;
  int completion_tokens = 0;
  std::optional<ApiError> error;  // the engine failed (500)
};

class Job {
 public:
  Job(PreparedRequest request, int64_t arrival_ns) : request_(std::move(request)), arrival_ns_(arrival_ns) {}

  const PreparedRequest& request() const { return request_; }
  int64_t arrival_ns() const { return arrival_ns_; }

  // Worker side.
  void append(std::string_view text);
  // A token's logprob entry (requests with logprobs), in token order.
  void append_logprob(TokenLogprob entry);
  void finish(JobResult result);
  bool cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

  // HTTP side: blocks until there is new text or the job finished; returns the text taken and,
  // once finished (and all text taken), the result.
  struct Update {
    std::string text;
    std::vector<TokenLogprob> logprobs;
    std::optional<JobResult> result;
  };
  Update wait_update();
  // The same, giving up after `timeout` (nothing then), so that the waiter can check on its client
  // and its deadline.
  std::optional<Update> wait_update_for(std::chrono::milliseconds timeout);
  void cancel() { cancelled_.store(true, std::memory_order_relaxed); }

 private:
  PreparedRequest request_;
  int64_t arrival_ns_;
  std::atomic<bool> cancelled_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::string pending_;
  std::vector<TokenLogprob> pending_logprobs_;
  std::optional<JobResult> result_;
};

}  // namespace recur::serve
