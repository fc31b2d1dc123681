#include "serve/job_output.h"

#include "core/clock.h"

namespace recur::serve {

bool JobOutput::emit(std::string_view piece) {
  const int64_t t = now_ns();
  if (last_ns_ == 0)
    metrics_.observe_ttft(double(t - job_.arrival_ns()) / 1e9);
  else
    metrics_.observe_itl(double(t - last_ns_) / 1e9);
  last_ns_ = t;
  job_.append(matcher_.feed(piece));
  return !matcher_.stopped() && !job_.cancelled();
}

bool JobOutput::emit(std::string_view piece, TokenLogprob entry) {
  job_.append_logprob(std::move(entry));
  return emit(piece);
}

std::string JobOutput::piece_of(const Tokenizer& tok, TokenId token, bool first, size_t prompt_tokens) {
  std::string piece = tok.piece(token);
  if (first && tok.vocabulary().add_space_prefix && prompt_tokens <= 1 && !piece.empty() && piece[0] == ' ')
    piece.erase(0, 1);  // nothing before it: drop the word-start space
  return piece;
}

void JobOutput::finish(int prompt_tokens, int generated_tokens, bool ended_at_eos) {
  job_.append(matcher_.flush());
  JobResult result;
  result.prompt_tokens = prompt_tokens;
  result.completion_tokens = generated_tokens;
  metrics_.add_tokens(prompt_tokens, generated_tokens);
  metrics_.observe_latency(double(now_ns() - job_.arrival_ns()) / 1e9);
  if (job_.cancelled()) {
    result.finish_reason = "cancelled";
    metrics_.count_cancelled();
  } else {
    result.finish_reason = ended_at_eos || matcher_.stopped() ? "stop" : "length";
  }
  job_.finish(std::move(result));
}

void JobOutput::fail(std::string_view what) {
  JobResult result;
  result.prompt_tokens = int(job_.request().prompt_ids.size());
  result.finish_reason = "error";
  result.error = ApiError{500, "generation failed: " + std::string(what), "server_error", "", "engine_error"};
  job_.finish(std::move(result));
}

void JobOutput::finish_cancelled(Job& job, Metrics& metrics) {
  JobResult result;
  result.prompt_tokens = int(job.request().prompt_ids.size());
  result.finish_reason = "cancelled";
  metrics.count_cancelled();
  job.finish(std::move(result));
}

void cancel_job(const std::shared_ptr<Job>& job, JobQueue& queue, Metrics& metrics) {
  job->cancel();
  if (queue.remove(job)) JobOutput::finish_cancelled(*job, metrics);
}

}  // namespace recur::serve
