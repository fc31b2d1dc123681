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
  for (int run = 0; run < o.warmup_runs + o.runs; ++run) {
    RECUR_ASSIGN_OR_RETURN(auto session, model.new_session(pool, o.prefill_tokens + o.decode_tokens, knobs));
    int64_t t0 = now_ns();
    std::span<const float> logits;
    for (TokenId t : prompt) {
      RECUR_ASSIGN_OR_RETURN(logits, session->step(t));
    }
    int64_t t1 = now_ns();
    for (int i = 0; i < o.decode_tokens; ++i) {
      RECUR_ASSIGN_OR_RETURN(logits, session->step(argmax(logits)));
    }
    int64_t t2 = now_ns();
    if (run < o.warmup_runs) continue;
    r.prefill_tok_s.push_back(o.prefill_tokens / (double(t1 - t0) / 1e9));
    r.decode_tok_s.push_back(o.decode_tokens / (double(t2 - t1) / 1e9));
  }
  r.weight_bytes_per_token = double(model.weight_bytes_per_token());
  return r;
}

}  // namespace recur
