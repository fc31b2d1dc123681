// The batch tests' shared scenario (llama_batch_test, hybrid_batch_test): streams A, B, C
// prefilled in one interleaved forward and decoded together greedily; then B is freed and D
// added (its slot, pages and KDA state reused), D's prompt runs in the same forward as A's and
// C's decode tokens; then A, C, D decode. Test-only (gtest assertions).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <map>
#include <span>
#include <vector>

#include "engine/model.h"

namespace recur::testing {

// What one stream was fed, and its logits after each position.
struct StreamLog {
  std::vector<TokenId> tokens;
  std::map<int, std::vector<float>> logits;  // position of the token -> logits after it
};
using ScenarioLog = std::map<char, StreamLog>;

inline TokenId scenario_argmax(std::span<const float> v) {
  return TokenId(std::max_element(v.begin(), v.end()) - v.begin());
}

// prompts: A, B, C, D's; steps: decode steps before B leaves and after D joins.
inline ScenarioLog run_batch_scenario(Batch& batch, int vocab, const std::array<std::vector<TokenId>, 4>& prompts,
                                      int steps) {
  ScenarioLog log;
  std::map<char, SeqId> seq;
  std::map<char, std::vector<TokenId>> pending;  // tokens of the next forward
  auto add = [&](char name, std::vector<TokenId> p) {
    auto s = batch.add_sequence();
    ASSERT_TRUE(s.has_value()) << s.error().message();
    seq[name] = *s;
    pending[name] = std::move(p);
  };
  // One forward: pending tokens interleaved round-robin, logits wanted at each stream's last one.
  auto forward = [&] {
    std::vector<BatchToken> rows;
    std::vector<char> owner;
    for (size_t i = 0;; ++i) {
      bool any = false;
      for (auto& [name, toks] : pending)
        if (i < toks.size()) {
          rows.push_back({.seq = seq[name], .token = toks[i], .want_logits = i + 1 == toks.size()});
          if (rows.back().want_logits) owner.push_back(name);
          any = true;
        }
      if (!any) break;
    }
    auto logits = batch.forward(rows);
    ASSERT_TRUE(logits.has_value()) << logits.error().message();
    ASSERT_EQ(logits->size(), owner.size() * size_t(vocab));
    for (size_t j = 0; j < owner.size(); ++j) {
      StreamLog& s = log[owner[j]];
      s.tokens.insert(s.tokens.end(), pending[owner[j]].begin(), pending[owner[j]].end());
      auto row = logits->subspan(j * size_t(vocab), size_t(vocab));
      s.logits[int(s.tokens.size()) - 1].assign(row.begin(), row.end());
      EXPECT_EQ(batch.position(seq[owner[j]]), int(s.tokens.size()));
    }
    pending.clear();
  };
  auto next = [&](char n) { pending[n] = {scenario_argmax(log[n].logits.rbegin()->second)}; };
  add('A', prompts[0]);
  add('B', prompts[1]);
  add('C', prompts[2]);
  forward();
  for (int i = 0; i < steps; ++i) {
    for (char n : {'A', 'B', 'C'}) next(n);
    forward();
  }
  const KvUsage before = batch.kv_usage();
  EXPECT_TRUE(batch.free_sequence(seq['B']).has_value());
  EXPECT_LT(batch.kv_usage().pages_used, before.pages_used) << "B's pages go back to the pool";
  add('D', prompts[3]);
  EXPECT_EQ(seq['D'], seq['B']) << "D reuses B's slot";
  for (char n : {'A', 'C'}) next(n);
  forward();
  for (int i = 0; i < steps; ++i) {
    for (char n : {'A', 'C', 'D'}) next(n);
    forward();
  }
  return log;
}

}  // namespace recur::testing
