#include "engine/engine_bench.h"

#include <algorithm>
#include <random>

#include "core/clock.h"
#include "engine/sampler.h"

namespace recur {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double EngineBenchResult::median_prefill() const { return median_of(prefill_tok_s); }
double EngineBenchResult::median_decode() const { return median_of(decode_tok_s); }

namespace {

// B sequences: prompts prefilled one forward each, then decoded together, one forward per step.
Status bench_engine_batch(const Model& model, ThreadPool& pool, const EngineBenchOptions& o, const Config& knobs,
                          const std::vector<TokenId>& prompt, EngineBenchResult& r) {
  const BatchOptions bo{.max_sequences = o.batch, .max_tokens = o.prefill_tokens + o.decode_tokens,
                        .max_batch_tokens = std::max(o.prefill_tokens, o.batch)};
  const size_t vocab = size_t(model.config().vocab);
  for (int run = 0; run < o.warmup_runs + o.runs; ++run) {
    RECUR_ASSIGN_OR_RETURN(auto batch, model.new_batch(pool, bo, knobs));
    std::vector<BatchToken> rows(size_t(o.batch));
    const int64_t t0 = now_ns();
    for (int b = 0; b < o.batch; ++b) {
      RECUR_ASSIGN_OR_RETURN(SeqId seq, batch->add_sequence());
      std::vector<BatchToken> run_rows;
      for (size_t i = 0; i < prompt.size(); ++i)
        run_rows.push_back({.seq = seq, .token = prompt[i], .want_logits = i + 1 == prompt.size()});
      RECUR_ASSIGN_OR_RETURN(std::span<const float> logits, batch->forward(run_rows));
      rows[size_t(b)] = {.seq = seq, .token = argmax(logits), .want_logits = true};
    }
    const int64_t t1 = now_ns();
    for (int i = 0; i < o.decode_tokens; ++i) {
      RECUR_ASSIGN_OR_RETURN(std::span<const float> logits, batch->forward(rows));
      for (size_t b = 0; b < rows.size(); ++b) rows[b].token = argmax(logits.subspan(b * vocab, vocab));
    }
    const int64_t t2 = now_ns();
    if (run < o.warmup_runs) continue;
    r.prefill_tok_s.push_back(double(o.batch) * o.prefill_tokens / (double(t1 - t0) / 1e9));
    r.decode_tok_s.push_back(double(o.batch) * o.decode_tokens / (double(t2 - t1) / 1e9));
  }
  return ok_status();
}

}  // namespace

Result<EngineBenchResult> bench_engine(const Model& model, ThreadPool& pool, const EngineBenchOptions& o,
                                       const Config& knobs) {
  if (o.prefill_tokens < 1 || o.decode_tokens < 1 || o.runs < 1)
    return invalid_argument("engine bench needs at least 1 prefill token, 1 decode token and 1 run");
  const Vocabulary& vocab = model.tokenizer().vocabulary();
  std::vector<TokenId> prompt;
  std::mt19937 rng(1234);
  while (int(prompt.size()) < o.prefill_tokens) {
    TokenId t = TokenId(rng() % vocab.tokens.size());
    if (vocab.kinds[size_t(t)] == TokenKind::kNormal) prompt.push_back(t);
  }
  EngineBenchResult r;
  r.weight_bytes_per_token = double(model.weight_bytes_per_token());
  if (o.batch > 1) {
    RECUR_RETURN_IF_ERROR(bench_engine_batch(model, pool, o, knobs, prompt, r));
    return r;
  }
  for (int run = 0; run < o.warmup_runs + o.runs; ++run) {
    RECUR_ASSIGN_OR_RETURN(auto session, model.new_session(pool, o.prefill_tokens + o.decode_tokens, knobs));
    int64_t t0 = now_ns();
    RECUR_ASSIGN_OR_RETURN(std::span<const float> logits, session->prefill(prompt));
    int64_t t1 = now_ns();
    for (int i = 0; i < o.decode_tokens; ++i) {
      RECUR_ASSIGN_OR_RETURN(logits, session->step(argmax(logits)));
    }
    int64_t t2 = now_ns();
    if (run < o.warmup_runs) continue;
    r.prefill_tok_s.push_back(o.prefill_tokens / (double(t1 - t0) / 1e9));
    r.decode_tok_s.push_back(o.decode_tokens / (double(t2 - t1) / 1e9));
  }
  return r;
}

}  // namespace recur
