// Continuous batching for one engine worker: one Batch (model.h) of up to max_sequences
// sequences, advanced by one forward per iteration. Each iteration
//   1. drops sequences whose client went away (the job's cancel flag);
//   2. admits queued jobs, oldest first, while a sequence slot is free and the KV pages not yet
//      promised to running sequences cover the new one's prompt plus max_tokens (so a running
//      sequence never runs out of pages and nothing is preempted); the first job that does not
//      fit waits at the head of the queue;
//   3. builds one forward: every decoding sequence's last sampled token, then prefill chunks of
//      the sequences still reading their prompts, oldest first, up to max_batch_tokens in all
//      (a long prompt takes several iterations; logits only for its last prompt token);
//   4. samples each logits row with its request's own sampler, streams the text through
//      JobOutput (stop sequences, max_tokens, EOS, usage, logprobs) and frees finished sequences
//      at once.
// A request with echo and logprobs asks logits at every prompt position: each one's row gives the
// logprob of the prompt token after it (token_logprobs.h), the last one's samples as usual.
// Generation per request follows generate_from_ids, so greedy output equals a request run alone
// up to the float rounding the Batch contract allows.
//
// Disaggregated decode (role_decode.cc) sets SchedulerOptions::import_prompt: each admitted
// job's prompt was prefilled elsewhere, so instead of prefill chunks its state is installed into
// the fresh sequence and the first token is sampled from the prompt's last logits it returns;
// from then on it decodes in the batch like any other sequence.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "core/status.h"
#include "engine/model.h"
#include "engine/sampler.h"
#include "serve/job_output.h"
#include "serve/job_queue.h"
#include "serve/metrics.h"

namespace recur::serve {

// Installs `job`'s prefilled prompt state in `seq` (a fresh sequence of `batch`, holding
// nothing yet) and returns the prompt's last logits (vocab floats). Runs on the scheduler's
// thread, between forwards. An error fails that job alone (500).
using PromptImport = std::function<Result<std::vector<float>>(Job& job, Batch& batch, SeqId seq)>;

struct SchedulerOptions {
  int max_sequences = 16;
  int max_batch_tokens = 256;
  PromptImport import_prompt;  // null: prompts are prefilled in the batch
};

class BatchScheduler {
 public:
  // Makes the worker's Batch over `pool` (sequences of up to the model's context); the error
  // of Model::new_batch as is (unsupported: the architecture or numerics has no batched forward).
  static Result<std::unique_ptr<BatchScheduler>> create(const Model& model, ThreadPool& pool,
                                                        const SchedulerOptions& options, JobQueue& queue,
                                                        Metrics& metrics, const Config& knobs);
  // Iterates until the queue is closed and empty and no sequence is left.
  void run();

 private:
  struct Running {
    std::shared_ptr<Job> job;
    SeqId seq;
    std::vector<TokenId> prompt;  // the request's ids (BOS when it had none)
    Sampler sampler;
    JobOutput out;
    int64_t reserved_pages;  // for prompt + max_tokens
    size_t fed = 0;          // prompt tokens forwarded
    TokenId next = -1;       // the sampled token the next forward appends
    int generated = 0;
    bool eos = false;
    bool done = false;
    bool failed = false;  // the job was finished with an engine error
    bool prompt_text_started = false;  // an echoed prompt's first non-empty token was sent
  };
  // One logits row of a forward: its sequence, and the prompt position it scores (echo with
  // logprobs) or -1 for the row the next token is sampled from.
  struct Row {
    Running* owner;
    int64_t prompt_position;
  };

  BatchScheduler(const Model& model, std::unique_ptr<Batch> batch, const SchedulerOptions& options, JobQueue& queue,
                 Metrics& metrics, KernelChoice sample_kernel)
      : model_(model), batch_(std::move(batch)), options_(options), queue_(queue), metrics_(metrics),
        sample_kernel_(sample_kernel) {}
  // False once the queue is closed and empty while nothing runs.
  bool admit();
  bool fits(const Job& job) const;
  void start(std::shared_ptr<Job> job);
  void forward_once();
  void advance(Running& r, std::span<const float> logits);
  // The logprob entry of prompt token `position` (echo), from the previous position's logits
  // (none for position 0), its text as the echoed prompt reads (Tokenizer::decode).
  void score_prompt_token(Running& r, size_t position, std::span<const float> logits);
  void retire_done();

  const Model& model_;
  std::unique_ptr<Batch> batch_;
  SchedulerOptions options_;
  JobQueue& queue_;
  Metrics& metrics_;
  KernelChoice sample_kernel_;  // kernel.sample.variant: every request's sampler picks through it
  std::vector<std::unique_ptr<Running>> running_;  // in admission order
  std::vector<BatchToken> tokens_;                 // this forward's tokens
  std::vector<Row> rows_;                           // per logits row
};

}  // namespace recur::serve
