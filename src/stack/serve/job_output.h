// What both generation paths (one session per job, engine_workers.cc; the continuous-batching
// scheduler, batch_scheduler.cc) do with a job's tokens: turn each piece into text through the
// stop matcher, record TTFT and inter-token latency, and finish the job with its usage counts
// and finish reason. One per running job; used by one engine thread.
#pragma once

#include <cstdint>
#include <string_view>

#include "engine/tokenizer.h"
#include "serve/job.h"
#include "serve/job_queue.h"
#include "serve/metrics.h"
#include "serve/stop_matcher.h"

namespace recur::serve {

class JobOutput {
 public:
  JobOutput(Job& job, Metrics& metrics) : job_(job), metrics_(metrics), matcher_(job.request().stop) {}

  // The piece of a generated token (the first one's word-start space dropped when the prompt
  // is only BOS, as generate_from_ids does); false when generation should stop (a stop
  // sequence matched, the client went away).
  bool emit(std::string_view piece);
  // The same with the token's logprob entry (requests with logprobs).
  bool emit(std::string_view piece, TokenLogprob entry);
  // A prompt token's logprob entry (echo with logprobs); no text (the server echoes the prompt).
  void emit_prompt_logprob(TokenLogprob entry) { job_.append_logprob(std::move(entry)); }
  // Text for a sampled token of a prompt of `prompt_tokens` (generate_from_ids's rule).
  static std::string piece_of(const Tokenizer& tok, TokenId token, bool first, size_t prompt_tokens);

  // Ends the job: flushes held-back text, counts usage, finish reason "cancelled" when the job
  // was cancelled, else "stop" (EOS or a stop sequence) or "length".
  void finish(int prompt_tokens, int generated_tokens, bool ended_at_eos);
  // Ends a job that failed in the engine (500).
  void fail(std::string_view what);
  // Ends a job cancelled before it started.
  static void finish_cancelled(Job& job, Metrics& metrics);

 private:
  Job& job_;
  Metrics& metrics_;
  StopMatcher matcher_;
  int64_t last_ns_ = 0;
};

// Cancels `job`: a running one is freed by its scheduler at the next step; a queued one leaves
// the queue now (finished as cancelled), so that it holds no place there either.
void cancel_job(const std::shared_ptr<Job>& job, JobQueue& queue, Metrics& metrics);

}  // namespace recur::serve
