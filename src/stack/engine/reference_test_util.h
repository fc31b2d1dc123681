// The checks the architecture tests share (header-only, tests only): a model's native forward
// against its float64 reference session (engine.numerics=f64_reference), and a prefill against
// token-by-token decode.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/thread_pool.h"
#include "engine/model.h"

namespace recur::testing {

// fp32 activations, so the engine and the reference see the same weights and differ only by
// fp32 rounding (the default Q8_0 / F16 activations are the gemm's own, documented error).
inline Config exact_knobs() {
  Config k;
  EXPECT_TRUE(k.set("kernel.gemm.q8_0_activations", "f32").has_value());
  EXPECT_TRUE(k.set("kernel.gemm.f16_activations", "f32").has_value());
  return k;
}

inline std::unique_ptr<Session> session(const Model& m, ThreadPool& pool, const Config& knobs, int tokens = 32) {
  auto s = m.new_session(pool, tokens, knobs);
  EXPECT_TRUE(s.has_value()) << (s ? "" : s.error().message());
  return s ? std::move(*s) : nullptr;
}

inline int argmax(std::span<const float> x) { return int(std::max_element(x.begin(), x.end()) - x.begin()); }

// |engine - reference| <= 2e-4 * max(1, max |logit|) at each of 12 steps (a 5-token prompt,
// then each side's greedy pick of the reference's), and the greedy tokens are the same. Returns
// the largest error relative to max(1, max |logit|).
inline double expect_engine_matches_reference(const Model& m, const std::string& what) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  Config ref_knobs;
  EXPECT_TRUE(ref_knobs.set("engine.numerics", "f64_reference").has_value());
  auto fast = session(m, **pool, exact_knobs());
  auto ref = session(m, **pool, ref_knobs);
  if (!fast || !ref) return 1e30;
  const std::vector<int> prompt = {17, 250, 3, 399, 64};
  int token = 17;
  double worst = 0;
  for (int i = 0; i < 12; ++i) {
    const int t = i < int(prompt.size()) ? prompt[size_t(i)] : token;
    auto got = fast->step(t);
    auto want = ref->step(t);
    EXPECT_TRUE(got.has_value() && want.has_value()) << what;
    if (!got || !want) return 1e30;
    double err = 0, scale = 0;
    bool finite = true;  // std::max drops a NaN: checked on its own
    for (size_t v = 0; v < got->size(); ++v) {
      finite = finite && std::isfinite((*got)[v]) && std::isfinite((*want)[v]);
      err = std::max(err, std::fabs(double((*got)[v]) - double((*want)[v])));
      scale = std::max(scale, std::fabs(double((*want)[v])));
    }
    EXPECT_TRUE(finite) << what << " step " << i;
    EXPECT_LT(err, 2e-4 * std::max(1.0, scale)) << what << " step " << i;
    worst = std::max(worst, err / std::max(1.0, scale));
    EXPECT_EQ(argmax(*got), argmax(*want)) << what << " greedy token at step " << i;
    token = argmax(*want);
  }
  return worst;
}

// A prefill of a 9-token prompt ends where stepping it token by token ends (within 1e-4), and
// both decode on alike.
inline void expect_prefill_equals_steps(const Model& m, ThreadPool& pool, const Config& knobs, const std::string& what) {
  const std::vector<TokenId> prompt = {9, 120, 33, 7, 301, 44, 2, 18, 250};
  auto batched = session(m, pool, knobs);
  auto stepped = session(m, pool, knobs);
  ASSERT_TRUE(batched && stepped) << what;
  auto p = batched->prefill(prompt);
  ASSERT_TRUE(p.has_value()) << p.error().message();
  const std::vector<float> prefilled(p->begin(), p->end());
  std::vector<float> last;
  for (TokenId t : prompt) {
    auto s = stepped->step(t);
    ASSERT_TRUE(s.has_value());
    last.assign(s->begin(), s->end());
  }
  for (size_t v = 0; v < last.size(); ++v) ASSERT_NEAR(prefilled[v], last[v], 1e-4) << what << " " << v;
  auto x = batched->step(77);
  ASSERT_TRUE(x.has_value());
  const std::vector<float> xs(x->begin(), x->end());
  auto y = stepped->step(77);
  ASSERT_TRUE(y.has_value());
  for (size_t v = 0; v < xs.size(); ++v) ASSERT_NEAR(xs[v], (*y)[v], 1e-4) << what << " " << v;
}

// Two sequences in one forward (prompts of 7 and 3 tokens interleaved, then one decode step of
// each) give what each gives alone in a session, within 1e-4.
inline void expect_batched_sequences_match_alone(const Model& m) {
  auto pool = ThreadPool::create({.threads = 2, .pin = false});
  auto batch = m.new_batch(**pool, {.max_sequences = 2, .max_tokens = 32, .max_batch_tokens = 32}, Config());
  ASSERT_TRUE(batch.has_value()) << batch.error().message();
  auto s0 = (*batch)->add_sequence(), s1 = (*batch)->add_sequence();
  ASSERT_TRUE(s0.has_value() && s1.has_value());
  const std::vector<std::vector<TokenId>> prompts = {{5, 17, 230, 8, 99, 3, 41}, {300, 2, 64}};
  std::vector<BatchToken> toks;
  for (size_t i = 0; i < 7; ++i)  // interleaved, the last token of each wanting logits
    for (size_t q = 0; q < 2; ++q)
      if (i < prompts[q].size())
        toks.push_back({.seq = q == 0 ? *s0 : *s1, .token = prompts[q][i], .want_logits = i + 1 == prompts[q].size()});
  auto first = (*batch)->forward(toks);
  ASSERT_TRUE(first.has_value()) << first.error().message();
  const std::vector<float> prefill_logits(first->begin(), first->end());  // seq 1's row comes first (it ends first)
  auto step = (*batch)->forward(std::vector<BatchToken>{{.seq = *s0, .token = 77, .want_logits = true},
                                                       {.seq = *s1, .token = 78, .want_logits = true}});
  ASSERT_TRUE(step.has_value()) << step.error().message();
  const std::vector<float> step_logits(step->begin(), step->end());
  const size_t V = size_t(m.config().vocab);
  for (size_t q = 0; q < 2; ++q) {
    auto alone = session(m, **pool, Config());
    ASSERT_TRUE(alone);
    auto p = alone->prefill(prompts[q]);
    ASSERT_TRUE(p.has_value());
    const float* got = prefill_logits.data() + (q == 0 ? V : 0);
    for (size_t v = 0; v < V; ++v) ASSERT_NEAR(got[v], (*p)[v], 1e-4) << q << " prefill " << v;
    auto d = alone->step(q == 0 ? 77 : 78);
    ASSERT_TRUE(d.has_value());
    for (size_t v = 0; v < V; ++v) ASSERT_NEAR(step_logits[q * V + v], (*d)[v], 1e-4) << q << " decode " << v;
  }
}

}  // namespace recur::testing
