#include "serve/batch_scheduler.h"

#include <algorithm>

#include "engine/batch_plan.h"
#include "serve/token_logprobs.h"

namespace recur::serve {
namespace {

std::vector<TokenId> scheduler_prompt_ids(const Model& model, const PreparedRequest& req) {
  std::vector<TokenId> ids = req.prompt_ids;
  const int bos = model.tokenizer().vocabulary().bos;
  if (ids.empty()) ids.push_back(bos >= 0 ? bos : 0);  // as generate_from_ids
  return ids;
}

int64_t scheduler_pages_needed(const PreparedRequest& req) {
  return batch_kv_pages_for(int64_t(std::max<size_t>(req.prompt_ids.size(), 1)) + req.options.max_new_tokens);
}

}  // namespace

Result<std::unique_ptr<BatchScheduler>> BatchScheduler::create(const Model& model, ThreadPool& pool,
                                                               const SchedulerOptions& options, JobQueue& queue,
                                                               Metrics& metrics, const Config& knobs) {
  if (options.max_sequences < 1)
    return invalid_argument("--max-seqs is {}; expected at least 1", options.max_sequences);
  if (options.max_batch_tokens < options.max_sequences)
    return invalid_argument("--max-batch-tokens is {}; expected at least --max-seqs ({}), so that every running "
                            "sequence's decode token fits in one forward",
                            options.max_batch_tokens, options.max_sequences);
  const BatchOptions bo{.max_sequences = options.max_sequences, .max_tokens = model.config().context,
                        .max_batch_tokens = options.max_batch_tokens};
  RECUR_ASSIGN_OR_RETURN(std::unique_ptr<Batch> batch, model.new_batch(pool, bo, knobs));
  RECUR_ASSIGN_OR_RETURN(KernelChoice sample_kernel, resolve_kernel(knobs, "sample"));
  return std::unique_ptr<BatchScheduler>(
      new BatchScheduler(model, std::move(batch), options, queue, metrics, sample_kernel));
}

void BatchScheduler::run() {
  while (admit()) {
    for (auto& r : running_) r->done = r->done || r->job->cancelled();
    retire_done();
    if (!running_.empty()) forward_once();
    retire_done();
  }
}

bool BatchScheduler::admit() {
  while (int(running_.size()) < options_.max_sequences) {
    std::shared_ptr<Job> job;
    if (running_.empty()) {
      job = queue_.pop();  // idle: block for work
      if (!job) return false;
    } else {
      job = queue_.try_pop_if([this](const Job& j) { return fits(j); });
      if (!job) break;
    }
    start(std::move(job));
  }
  return true;
}

bool BatchScheduler::fits(const Job& job) const {
  const KvUsage kv = batch_->kv_usage();
  if (kv.pages_total == 0) return true;  // no attention layers: no pages to run out of
  int64_t promised = 0;                  // pages running sequences may still take
  for (const auto& r : running_)
    promised += std::max<int64_t>(0, r->reserved_pages - batch_kv_pages_for(batch_->position(r->seq)));
  return kv.pages_total - kv.pages_used - promised >= scheduler_pages_needed(job.request());
}

void BatchScheduler::start(std::shared_ptr<Job> job) {
  if (job->cancelled()) return JobOutput::finish_cancelled(*job, metrics_);
  const PreparedRequest& req = job->request();
  JobOutput out(*job, metrics_);
  if (auto valid = req.options.sampling.validate(); !valid) return out.fail(valid.error().to_string());
  if (!fits(*job)) {  // only when idle: it can never fit
    return out.fail(fmt::format("the request needs {} KV pages and the batch has {} (engine.hybrid.kv_pages)",
                                scheduler_pages_needed(req), batch_->kv_usage().pages_total));
  }
  auto seq = batch_->add_sequence();
  if (!seq) return out.fail(seq.error().to_string());
  Result<std::vector<float>> imported_logits;
  if (options_.import_prompt) {
    imported_logits = options_.import_prompt(*job, *batch_, *seq);
    if (!imported_logits) {
      (void)batch_->free_sequence(*seq);  // a live sequence: cannot fail
      return out.fail(imported_logits.error().to_string());
    }
  }
  metrics_.running().fetch_add(1);
  running_.push_back(std::unique_ptr<Running>(new Running{
      .job = job, .seq = *seq, .prompt = scheduler_prompt_ids(model_, req), .sampler = Sampler(req.options.sampling, sample_kernel_),
      .out = std::move(out), .reserved_pages = scheduler_pages_needed(req)}));
  if (req.prompt_logprobs) score_prompt_token(*running_.back(), 0, {});
  if (options_.import_prompt) {  // the prompt is in: sample its first token now, decode from the next forward
    Running& r = *running_.back();
    r.fed = r.prompt.size();
    advance(r, *imported_logits);
  }
}

void BatchScheduler::forward_once() {
  tokens_.clear();
  rows_.clear();
  int sequences = 0;
  for (auto& r : running_) {
    if (r->fed < r->prompt.size()) continue;
    tokens_.push_back({.seq = r->seq, .token = r->next, .want_logits = true});
    rows_.push_back({r.get(), -1});
    ++sequences;
  }
  int64_t budget = options_.max_batch_tokens - int64_t(tokens_.size());
  for (auto& r : running_) {
    if (budget <= 0) break;
    if (r->fed >= r->prompt.size()) continue;
    const size_t n = std::min<size_t>(r->prompt.size() - r->fed, size_t(budget));
    const bool score_prompt = r->job->request().prompt_logprobs;
    for (size_t k = 0; k < n; ++k) {
      const size_t position = r->fed + k;
      const bool last = position + 1 == r->prompt.size();
      tokens_.push_back({.seq = r->seq, .token = r->prompt[position], .want_logits = last || score_prompt,
                         .embedding = r->job->request().prompt_embedding(position)});
      if (last || score_prompt) rows_.push_back({r.get(), last ? -1 : int64_t(position) + 1});
    }
    r->fed += n;
    budget -= int64_t(n);
    ++sequences;
  }
  auto logits = batch_->forward(tokens_);
  if (!logits) {
    // The contract left every sequence as it was; the requests in it cannot go on.
    for (auto& r : running_) {
      r->out.fail(logits.error().to_string());
      r->failed = true;
      r->done = true;
    }
    return;
  }
  const KvUsage kv = batch_->kv_usage();
  metrics_.observe_forward(sequences, int(tokens_.size()), kv.pages_used, kv.pages_total);
  const size_t vocab = size_t(model_.config().vocab);
  for (size_t row = 0; row < rows_.size(); ++row) {
    const std::span<const float> row_logits = logits->subspan(row * vocab, vocab);
    if (rows_[row].prompt_position >= 0)
      score_prompt_token(*rows_[row].owner, size_t(rows_[row].prompt_position), row_logits);
    else
      advance(*rows_[row].owner, row_logits);
  }
}

void BatchScheduler::score_prompt_token(Running& r, size_t position, std::span<const float> logits) {
  const Tokenizer& tok = model_.tokenizer();
  const TokenId token = r.prompt[position];
  TokenLogprob entry = position == 0 ? TokenLogprob{.token = tok.piece(token), .logprob = std::nullopt, .top = {}}
                                     : token_logprob(logits, token, *r.job->request().logprobs, tok);
  if (!r.prompt_text_started && !entry.token.empty()) {
    if (tok.vocabulary().add_space_prefix && entry.token[0] == ' ') entry.token.erase(0, 1);
    r.prompt_text_started = true;
  }
  r.out.emit_prompt_logprob(std::move(entry));
}

void BatchScheduler::advance(Running& r, std::span<const float> logits) {
  const GenerateOptions& o = r.job->request().options;
  if (r.generated >= o.max_new_tokens) {
    r.done = true;
    return;
  }
  const TokenId next = r.sampler.sample(logits);
  ++r.generated;
  const Tokenizer& tok = model_.tokenizer();
  if (o.stop_at_eos && next == tok.vocabulary().eos) {
    r.eos = true;
    r.done = true;
    return;
  }
  std::string piece = JobOutput::piece_of(tok, next, r.generated == 1, r.prompt.size());
  bool more = true;
  if (const auto& top = r.job->request().logprobs) {
    TokenLogprob entry = token_logprob(logits, next, *top, tok);
    entry.token = piece;  // the text the client reads, word-start space rule included
    more = r.out.emit(piece, std::move(entry));
  } else {
    more = r.out.emit(piece);
  }
  r.next = next;
  r.done = !more || r.generated == o.max_new_tokens;
}

void BatchScheduler::retire_done() {
  std::erase_if(running_, [this](const std::unique_ptr<Running>& r) {
    if (!r->done) return false;
    (void)batch_->free_sequence(r->seq);  // a live sequence: cannot fail
    metrics_.running().fetch_sub(1);      // before the client hears the end
    if (!r->failed) r->out.finish(int(r->job->request().prompt_ids.size()), r->generated, r->eos);
    return true;
  });
}

}  // namespace recur::serve
